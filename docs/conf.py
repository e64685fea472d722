"""Sphinx configuration of the jupyter-agent docs site (MyST Markdown, pydata-sphinx-theme).

Built with warnings as errors by ``./dev.sh test``:
``sphinx-build -W --keep-going -b html docs build/docs``. Three small extensions in ``_ext/``
write what must not be hand-copied: the tutorials (copied from ``notebooks/`` with their saved
outputs, never executed), the magics reference (from the magics' own argument parsers) and the
check that every name in ``jupyter_agent.__all__`` has an entry in the Python API reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupyter_agent

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "jupyter-agent"
author = "jupyter-agent developers"
copyright = "jupyter-agent developers"
release = jupyter_agent.__version__
version = release

extensions = [
    "myst_nb",  # MyST Markdown pages and the tutorial notebooks (it includes myst_parser)
    "sphinx.ext.autodoc",
    "sphinx_llms_txt",
    "tutorial_notebooks",
    "magics_reference",
    "api_coverage",
]

exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints", "**/data/**", "**/cassettes/**"]

# MyST: heading anchors for links such as guide/claude.md#spend-cap
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# Tutorials are rendered from the outputs saved in notebooks/*.ipynb: never re-executed here
# (nbval runs them in ./dev.sh test).
nb_execution_mode = "off"
# the notebooks' widget views are saved without their state (a finished cell is a static
# record); an output the site cannot render is left out, quietly
nb_render_priority_warning = False
# the answers' Markdown outputs are GitHub-flavoured (tables), as JupyterLab renders them
nb_render_markdown_format = "gfm"

# the API reference keeps the source order and shows signatures with their type hints as written
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "separated"
add_module_names = False

html_theme = "pydata_sphinx_theme"
html_title = "jupyter-agent"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []

# llms.txt (and llms-full.txt) next to the HTML, from the pages' text
llms_txt_summary = (
    "jupyter-agent: a Claude agent inside Jupyter notebooks (%%agent cells, inline tool-call "
    "views, per-tool control, notebook co-authoring, an MCP client and `%agent serve`)."
)
