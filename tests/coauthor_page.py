"""The co-authoring extension's page, as the browser tests drive it: where the built extension
is, finding a cell by its text, running it and waiting for its execution count, and waiting for
the extension to connect the panel to the kernel's agent."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: The built extension (``./dev.sh`` builds it from ``labextension/``).
BUILT = REPO / "jupyter_agent" / "labextension"


def cell_with(page: Any, source: str) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").filter(has_text=source).first


def agent_cell(page: Any, source: str) -> Any:
    """The agent's cell holding ``source`` (the %%agent cell's record quotes it too)."""
    return page.locator(".jp-Notebook .jp-Cell.jp-agent-cell").filter(has_text=source).first


def prompt_done(cell: Any) -> bool:
    prompt = cell.locator(".jp-InputPrompt").first.text_content() or ""
    return re.search(r"\[\d+\]", prompt) is not None


def run(page: Any, cell: Any, timeout_s: float = 90) -> None:
    cell.locator(".jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")
    wait_done(page, cell, timeout_s)


def wait_done(page: Any, cell: Any, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not prompt_done(cell):
        assert time.monotonic() < deadline, "the cell did not finish"
        page.wait_for_timeout(50)


def connected(page: Any) -> None:
    page.wait_for_selector(".jp-NotebookPanel[data-jupyter-agent='connected']")


def this_extension_path(tmp_path: Path) -> str:
    """A ``JUPYTER_PATH`` under ``tmp_path`` whose ``labextensions`` hold this checkout's built
    extension (set it in the environment of the Jupyter server a test starts)."""
    assert (BUILT / "package.json").is_file(), "build the extension first (./dev.sh builds it)"
    extensions = tmp_path / "jupyter-path" / "labextensions"
    extensions.mkdir(parents=True)
    (extensions / "jupyter-agent").symlink_to(BUILT)
    return str(tmp_path / "jupyter-path")


def inserted_cell_id(body: dict[str, Any]) -> str:
    """The id of the cell the last ``insert_cell`` result in a request's messages names."""
    found = re.findall(r"Inserted code cell (\S+) \(at", json.dumps(body["messages"]))
    return str(found[-1])
