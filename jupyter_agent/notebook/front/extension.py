"""The IPython extension entry points: ``%load_ext jupyter_agent`` and ``%unload_ext``.

Loading registers one ``AgentMagics`` instance (the front end of the notebook's session; IPython
keeps it in ``shell.magics_manager.registry``, where ``get_magics`` finds it), tells it about
every failing cell (IPython's ``post_run_cell`` event, for ``%agent error``) and starts the cell
recorder (``notebook_history``), the cell proposals (``propose_cell``) and the co-author link,
which register with the shell's one ``ExtensionServices`` (``services.py``); unloading closes the
session's connections and its background loop and stops them. Loading twice keeps the first
instance.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..runtime.subshell import QuickHandoffsDuringCells

#: The name IPython registers the magics under (``type(magics).__name__``).
_MAGICS_NAME = "AgentMagics"
#: The short switch interval during main-shell cells, per shell (``runtime/subshell.py``).
_handoffs: dict[int, QuickHandoffsDuringCells] = {}


def load_ipython_extension(ip: Any) -> None:
    """Register ``%%agent``, ``%agent`` and ``%agent_tools`` in the shell ``ip``."""
    from .magics import AgentMagics

    if get_magics(ip) is not None:
        return
    from ..coauthor.link import NotebookLink
    from ..kernel.propose_cell import CellProposals
    from ..kernel.recorder import CellRecorder
    from ..runtime.queue_wait import QueueWaits
    from .head_start import HeadStart

    CellRecorder(ip).install()
    QueueWaits(ip).install()  # an agent cell that waited behind a running one says so
    HeadStart(ip).install()  # the running cell waits while an answer beside it starts
    CellProposals(ip).install()
    NotebookLink(ip).install()  # a notebook frontend with our extension connects (in a kernel)
    magics = AgentMagics(shell=ip)
    ip.register_magics(magics)
    ip.events.register("post_run_cell", magics.last_error.post_run_cell)
    handoffs = QuickHandoffsDuringCells(ip)  # answers beside a CPU-bound cell (subshell.py)
    handoffs.install()
    _handoffs[id(ip)] = handoffs


def unload_ipython_extension(ip: Any) -> None:
    """Remove the magics and stop the session's agent."""
    magics = get_magics(ip)
    if magics is None:
        return
    with contextlib.suppress(ValueError):  # not registered
        ip.events.unregister("post_run_cell", magics.last_error.post_run_cell)
    magics.close()
    handoffs = _handoffs.pop(id(ip), None)
    if handoffs is not None:
        handoffs.uninstall()
    from ..coauthor.link import link_for
    from ..kernel.propose_cell import proposals_for
    from ..kernel.recorder import recorder_for
    from ..runtime.queue_wait import QueueWaits
    from ..runtime.services import service
    from .head_start import HeadStart

    for installed in (
        recorder_for(ip),
        proposals_for(ip),
        link_for(ip),
        service(ip, QueueWaits),
        service(ip, HeadStart),
    ):
        if installed is not None:
            installed.uninstall()
    for kind, names in (("line", ("agent", "agent_tools")), ("cell", ("agent",))):
        table = ip.magics_manager.magics[kind]
        for name in names:
            if getattr(table.get(name), "__self__", None) is magics:
                del table[name]
    registry = ip.magics_manager.registry
    if registry.get(_MAGICS_NAME) is magics:
        del registry[_MAGICS_NAME]
    if magics in ip.configurables:
        ip.configurables.remove(magics)


def get_magics(ip: Any) -> Any:
    """The ``AgentMagics`` of the shell ``ip``, or ``None`` when the extension is not loaded."""
    manager = getattr(ip, "magics_manager", None)
    return None if manager is None else manager.registry.get(_MAGICS_NAME)
