"""jsonschema, imported without loading the libraries of format checkers no tool uses.

``import jsonschema`` imports ``jsonschema._format``, which imports every optional library a
format check can use that is installed, and jupyter-events pulls most of them into every
JupyterLab environment. ``rfc3987_syntax`` (the ``iri`` check) builds a Lark Earley parser at
import time, 0.8 s and more on a busy machine; ``rfc3986_validator`` and the others cost tens of
milliseconds each. That was on the way to a fresh kernel's first request, for checks the registry
never makes (it validates with no format checker).

So the first import of jsonschema here sees stand-ins for those of them that jsonschema only
calls (a function or class taken by ``from x import f``, or a module attribute looked up at call
time): each attribute is a function that imports the real library on its first call and forwards
to it. The stand-ins are taken out of ``sys.modules`` again as soon as jsonschema is imported, so
anyone's later ``import rfc3987_syntax`` gets the real module, and every format check behaves as
before, its import moved to its first use. (``idna``, ``jsonpointer`` and ``isoduration`` are
left alone: jsonschema reads their exception classes at import time.)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

#: Libraries jsonschema's format checks only call: deferred to their first call.
DEFERRED = (
    "rfc3987_syntax",
    "rfc3986_validator",
    "rfc3339_validator",
    "fqdn",
    "uri_template",
    "webcolors",
)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _StandIn(types.ModuleType):
    """A module whose every attribute imports the real module when first called."""

    def __getattr__(self, attribute: str) -> Callable[..., Any]:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        name = self.__name__

        def forward(*args: Any, **kwargs: Any) -> Any:
            if sys.modules.get(name) is self:
                del sys.modules[name]
            return getattr(importlib.import_module(name), attribute)(*args, **kwargs)

        return forward


def _import_jsonschema() -> None:
    if "jsonschema" in sys.modules:
        return
    stand_ins = {
        name: _StandIn(name) for name in DEFERRED if name not in sys.modules and _installed(name)
    }
    sys.modules.update(stand_ins)
    try:
        importlib.import_module("jsonschema")
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


_import_jsonschema()

from jsonschema import exceptions as jsonschema_exceptions  # noqa: E402
from jsonschema import validators as jsonschema_validators  # noqa: E402
from jsonschema.protocols import Validator  # noqa: E402

__all__ = ["Validator", "jsonschema_exceptions", "jsonschema_validators"]
