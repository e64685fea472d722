"""save_session_context cannot be raced out of the workspace either (issue 11, point 2).

The session file's folder (``.jupyter_agent`` by default) is inside the workspace, where a model
can swap it for a symlink to an outside folder while the tool writes. A swapper process exchanges
the folder and such a symlink as fast as it can (``renameat2(RENAME_EXCHANGE)``) while the tool is
called hundreds of times: nothing outside may be created or changed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from race_arena import swapping

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files.session_file import SaveSessionContextTool
from jupyter_agent.tools.registry import ToolRegistry

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux"),
    pytest.mark.timeout(120),
]


@pytest.fixture
def swapped(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    workspace = tmp_path / "workspace"
    outside = tmp_path / "outside"
    (workspace / "dir").mkdir(parents=True)
    outside.mkdir()
    (outside / "session.md").write_text("the user's own file\n")
    (workspace / "link").symlink_to(outside, target_is_directory=True)
    with swapping(workspace, outside):
        yield workspace, outside


async def test_a_racing_swap_never_writes_the_session_file_outside(
    swapped: tuple[Path, Path],
) -> None:
    workspace, _outside = swapped
    context = ToolContext(
        workspace, session_context="model wrote this", session_context_file_path="dir/session.md"
    )
    registry = ToolRegistry()
    registry.register(SaveSessionContextTool(context))
    for _ in range(30):
        results = await asyncio.gather(
            *(registry.call("save_session_context", {"reason": "r"}) for _ in range(10))
        )
        for result in results:  # a refused call is fine; one that says where it wrote must be true
            assert result.is_error or "saved to dir/session.md" in result.content, result.content
