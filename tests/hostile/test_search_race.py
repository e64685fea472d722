"""The Python search walks by descriptors, so a racing swap cannot lead it outside (issue 11.2).

When ripgrep is missing, ``search_files`` lists files with the Python walk in the kernel's own
process — no sandbox — and ``search_text``'s Python worker runs unsandboxed where bubblewrap is
missing. A swapper process exchanges a workspace folder with a symlink to an outside folder
(``renameat2(RENAME_EXCHANGE)``) while both search with the Python backend hundreds of times:
no outside name or content may appear in a result.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from race_arena import SECRET

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.search.search import SearchFilesTool, SearchTextTool

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux"),
    pytest.mark.timeout(180),
]


@pytest.mark.parametrize(
    ("tool_class", "args", "rounds"),
    [
        (SearchFilesTool, {"pattern": "**/*.txt", "path": "dir"}, 30),
        (SearchFilesTool, {"pattern": "**/*.txt"}, 30),
        (SearchTextTool, {"pattern": "TOPSECRET|only out", "path": "dir"}, 6),
        (SearchTextTool, {"pattern": "TOPSECRET|only out"}, 6),
    ],
    ids=["files-in-dir", "files-everywhere", "text-in-dir", "text-everywhere"],
)
async def test_the_python_search_never_reaches_outside(
    arena: tuple[Path, Path],
    tool_class: type[SearchFilesTool] | type[SearchTextTool],
    args: dict[str, str],
    rounds: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without the reader sandbox: the walk itself must hold (as where bwrap is missing).
    monkeypatch.setenv("JUPYTER_AGENT_SANDBOX", "subreaper")
    workspace, _outside = arena
    tool = tool_class(ToolContext(workspace), backend="python")
    leaked: list[str] = []
    for _ in range(rounds):
        results = await asyncio.gather(
            *(tool.execute(dict(args)) for _ in range(10)), return_exceptions=True
        )
        leaked += [str(r) for r in results if SECRET in str(r) or "only outside" in str(r)]
    assert not leaked, leaked[0][:300]
