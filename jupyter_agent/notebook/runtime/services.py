"""The extension's services in one shell, owned by one object instead of hung on the shell.

``%load_ext jupyter_agent`` installs a cell recorder (``notebook_history``), the cell proposals
(``propose_cell``) and the co-author link (a notebook page's cell tools); ``%agent serve`` may run
a tool server. Each used to set a private attribute of the IPython shell and be found with its own
``*_for(shell)`` lookup; now each registers with the shell's ``ExtensionServices`` when it
installs and leaves it when it uninstalls, and the lookups ask that one owner. The magics
themselves are not here: IPython keeps them in ``shell.magics_manager.registry``
(``extension.get_magics``). A leaf: it imports none of the services, so each can import it.
"""

from __future__ import annotations

import weakref
from typing import Any, TypeVar

T = TypeVar("T")


class ExtensionServices:
    """The services installed in one shell, by their type (one of each)."""

    def __init__(self) -> None:
        self._by_type: dict[type, object] = {}
        #: The running ``%agent serve`` (``serve.KernelServe``), if any.
        self.server: Any = None

    def add(self, service: object) -> None:
        self._by_type[type(service)] = service

    def remove(self, service: object) -> None:
        if self._by_type.get(type(service)) is service:
            del self._by_type[type(service)]

    def get(self, kind: type[T]) -> T | None:
        found = self._by_type.get(kind)
        return found if isinstance(found, kind) else None


#: Each shell's services, for as long as the shell lives.
_OWNERS: weakref.WeakKeyDictionary[Any, ExtensionServices] = weakref.WeakKeyDictionary()


def services(shell: Any) -> ExtensionServices | None:
    """The services of ``shell``, made on first use; ``None`` for no shell (a test's ``None``,
    or an object that cannot be weakly referenced)."""
    if shell is None:
        return None
    try:
        owner = _OWNERS.get(shell)
        if owner is None:
            owner = _OWNERS[shell] = ExtensionServices()
    except TypeError:
        return None
    return owner


def service(shell: Any, kind: type[T]) -> T | None:
    """The ``kind`` service installed in ``shell``, if any."""
    owner = services(shell)
    return owner.get(kind) if owner is not None else None


def register(shell: Any, installed: object) -> None:
    """``installed`` is now ``shell``'s service of its type (its ``install``)."""
    owner = services(shell)
    if owner is not None:
        owner.add(installed)


def unregister(shell: Any, installed: object) -> None:
    """``installed`` leaves ``shell``'s services, if it is still the one there (its
    ``uninstall``)."""
    owner = services(shell)
    if owner is not None:
        owner.remove(installed)
