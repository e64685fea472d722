"""The tutorials as pages: ``notebooks/*.ipynb`` copied into ``docs/tutorials/`` when the build
starts, saved outputs and all (``nb_execution_mode = "off"``: nothing is executed).

Copied rather than linked so the site reads the notebooks as they are committed, and the copies
are git-ignored so there is one source. A copy is rewritten only when its notebook changed, so an
incremental build stays incremental. A file of ``notebooks/`` a tutorial links to (tutorial 06's
MCP server) is copied beside it, so the link is a download instead of a broken reference.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


#: ``[text](target)`` in a Markdown cell, the target relative (no scheme, no anchor only)
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")


def copy_if_changed(source: Path, copy: Path) -> None:
    data = source.read_bytes()
    if not copy.exists() or copy.read_bytes() != data:
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)


def linked_files(notebook: Path) -> set[Path]:
    """Files under ``notebooks/`` that the notebook's Markdown cells link to."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    found = set()
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for target in LINK.findall("".join(cell["source"])):
            path = (NOTEBOOKS / target.split("#")[0]).resolve()
            if path.is_file() and path.is_relative_to(NOTEBOOKS) and path.suffix != ".ipynb":
                found.add(path)
    return found


def copy_tutorials(app: Sphinx, config: Any) -> None:
    target = Path(app.srcdir) / "tutorials"
    for notebook in sorted(NOTEBOOKS.glob("[0-9]*.ipynb")):
        copy_if_changed(notebook, target / notebook.name)
        for linked in linked_files(notebook):
            copy_if_changed(linked, target / linked.relative_to(NOTEBOOKS))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", copy_tutorials)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
