"""The tutorials' saved outputs are what a new user reads first (issue 25): they must not show
the author's machine — no absolute path under /root, /home or /work — and the messages they
want to show must be whole.

Reads the committed notebooks as JSON; a second test runs the refusal the tutorial shows through
a real registry and checks that the message names no absolute path.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from jupyter_agent import ToolContext, create_default_registry

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
AUTHOR_PATH = re.compile(r"/(?:root|home|work)(?:/|\b)")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda path: path.name)
def test_no_saved_output_shows_an_absolute_path_of_the_authors_machine(notebook: Path) -> None:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = []
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            text = json.dumps(output, ensure_ascii=False)
            for match in AUTHOR_PATH.finditer(text):
                around = text[max(0, match.start() - 40) : match.end() + 40]
                found.append(f"cell {index}: …{around}…")
    assert not found, "\n".join(found)


def test_the_outside_workspace_refusal_names_no_absolute_path(tmp_path: Path) -> None:
    """Tutorial 02 had to replace the workspace's absolute path by hand; the message itself should
    not carry it (the model knows its workspace as ".")."""
    registry = create_default_registry(ToolContext(tmp_path))
    result = asyncio.run(registry.call("read_file", {"file_path": "../x.txt"}))
    assert result.is_error
    assert "is outside the workspace" in result.content
    assert str(tmp_path) not in result.content, result.content
