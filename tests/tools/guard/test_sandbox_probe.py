"""The first sandboxed call of a kernel must not hold the event loop while bubblewrap is probed.

``bwrap_works`` checks once per process that ``bwrap`` can create its namespaces: it starts it
and waits. On a busy machine that takes a fraction of a second, and it ran on the event loop at
the first search, ``web_fetch``, ``run_bash`` or ``git_commit`` of a session (figure 10 saw a
0.29 s pause). Here ``bwrap`` is a script that waits for the event loop of a fresh interpreter
to answer it (a barrier, not a time) before it runs the real one: a probe held on the loop is
never answered.
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
    import asyncio, json, sys
    from pathlib import Path
    from jupyter_agent.tools.context import ToolContext
    from jupyter_agent.tools.factory import create_default_registry

    async def main(tool, args, scratch):
        registry = create_default_registry(ToolContext(Path(sys.argv[1])))
        registry.enable("run_bash")

        async def answer():  # the loop answers every bwrap that waits for it
            while True:
                for waiting in scratch.glob("waiting.*"):
                    (scratch / ("answered." + waiting.name.split(".", 1)[1])).touch()
                await asyncio.sleep(0.01)

        answering = asyncio.create_task(answer())
        result = await registry.call(tool, args)
        answering.cancel()
        print(json.dumps({"error": result.is_error, "content": result.content}))

    asyncio.run(main(sys.argv[2], json.loads(sys.argv[3]), Path(sys.argv[4])))
    """
)

#: ``bwrap`` that waits (up to 5 s) for the child's event loop to answer it before it starts
#: the real one, and logs whether the loop did: a probe run on the loop finds it silent.
WAITING_BWRAP = """#!/bin/sh
echo > "{scratch}/waiting.$$"
i=0
while [ ! -e "{scratch}/answered.$$" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
if [ -e "{scratch}/answered.$$" ]; then echo answered; else echo silent; fi >> "{scratch}/log"
rm -f "{scratch}/waiting.$$"
exec {bwrap} "$@"
"""


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
    scratch = tmp_path / "barrier"
    scratch.mkdir()
    stub = WAITING_BWRAP.format(scratch=scratch, bwrap=shutil.which("bwrap"))
    (slow / "bwrap").write_text(stub)
    (slow / "bwrap").chmod(0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    env = {**os.environ, "PATH": f"{slow}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(workspace), tool, json.dumps(args), str(scratch)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not report["error"], report["content"]
    # the probe (the first bwrap) and every later one: the loop answered while each waited
    log = (scratch / "log").read_text().split()
    assert log and set(log) == {"answered"}, log
