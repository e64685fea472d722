"""The first sandboxed call of a kernel must not hold the event loop while bubblewrap is probed.

``bwrap_works`` checks once per process that ``bwrap`` can create its namespaces: it starts it
and waits. On a busy machine that takes a fraction of a second, and it ran on the event loop at
the first search, ``web_fetch``, ``run_bash`` or ``git_commit`` of a session (figure 10 saw a
0.29 s pause). Here ``bwrap`` is a script that takes a second to start (then runs the real one),
and a fresh interpreter measures the longest gap of a 10 ms ticker during its first tool call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from pathlib import Path
    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.factory import create_default_registry

    async def main(tool, args):
        registry = create_default_registry(ToolContext(Path(sys.argv[1])))
        registry.enable("run_bash")
        gaps = []
        async def ticker():
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now
        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        result = await registry.call(tool, args)
        ticking.cancel()
        print(json.dumps({"gap": max(gaps), "error": result.is_error, "content": result.content}))

    asyncio.run(main(sys.argv[2], json.loads(sys.argv[3])))
    """
)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("search_files", {"pattern": "*.txt"}),
        ("search_text", {"pattern": "hello"}),
        ("run_bash", {"command": "echo hi"}),
    ],
)
def test_the_first_sandboxed_call_leaves_the_loop_free(
    tmp_path: Path, tool: str, args: dict[str, object]
) -> None:
    slow = tmp_path / "bin"
    slow.mkdir()
    (slow / "bwrap").write_text(f'#!/bin/sh\nsleep 1\nexec {shutil.which("bwrap")} "$@"\n')
    (slow / "bwrap").chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    env = {**os.environ, "PATH": f"{slow}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(workspace), tool, json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not report["error"], report["content"]
    assert report["gap"] < 0.5, f"the event loop stood still for {report['gap']:.2f} s"
