"""The Python API reference covers ``jupyter_agent.__all__``: a name without an entry is a
build warning (an error under ``-W``), and so is an entry for a name that is not exported.

The reference page groups the names by hand (``autoclass``/``autofunction`` of
``jupyter_agent.NAME``, never a module path, so moving a module inside the package changes
nothing here); this check keeps the grouping complete as ``__all__`` grows.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE = "jupyter_agent"


def check_coverage(app: Sphinx, env: BuildEnvironment) -> None:
    import jupyter_agent

    objects = env.get_domain("py").objects  # type: ignore[attr-defined]
    documented = {
        name.removeprefix(PACKAGE + ".")
        for name in objects
        if name.startswith(PACKAGE + ".") and name.count(".") == 1
    }
    exported = set(jupyter_agent.__all__)
    for name in sorted(exported - documented):
        logger.warning(
            "jupyter_agent.%s is in __all__ but has no entry in the Python API reference", name
        )
    for name in sorted(documented - exported):
        logger.warning("jupyter_agent.%s is documented but not in jupyter_agent.__all__", name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-check-consistency", check_coverage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
