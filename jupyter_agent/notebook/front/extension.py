"""The IPython extension entry points: ``%load_ext jupyter_agent`` and ``%unload_ext``.

Loading registers one ``AgentMagics`` instance (the front end of the notebook's session), tells
it about every failing cell (IPython's ``post_run_cell`` event, for ``%agent error``) and starts
the cell recorder (``notebook_history``) and the cell proposals (``propose_cell``); unloading
closes the session's connections and its background loop and stops them. Loading twice keeps the
first instance.
"""

from __future__ import annotations

import contextlib
from typing import Any

_INSTANCE_ATTRIBUTE = "_jupyter_agent_magics"


def load_ipython_extension(ip: Any) -> None:
    """Register ``%%agent``, ``%agent`` and ``%agent_tools`` in the shell ``ip``."""
    from .magics import AgentMagics

    if getattr(ip, _INSTANCE_ATTRIBUTE, None) is not None:
        return
    from ..coauthor.link import NotebookLink
    from ..kernel.propose_cell import CellProposals
    from ..kernel.recorder import CellRecorder

    CellRecorder(ip).install()
    CellProposals(ip).install()
    NotebookLink(ip).install()  # a notebook frontend with our extension connects (in a kernel)
    magics = AgentMagics(shell=ip)
    ip.register_magics(magics)
    ip.events.register("post_run_cell", magics.last_error.post_run_cell)
    setattr(ip, _INSTANCE_ATTRIBUTE, magics)


def unload_ipython_extension(ip: Any) -> None:
    """Remove the magics and stop the session's agent."""
    magics = getattr(ip, _INSTANCE_ATTRIBUTE, None)
    if magics is None:
        return
    setattr(ip, _INSTANCE_ATTRIBUTE, None)
    with contextlib.suppress(ValueError):  # not registered
        ip.events.unregister("post_run_cell", magics.last_error.post_run_cell)
    magics.close()
    from ..coauthor.link import link_for
    from ..kernel.propose_cell import proposals_for
    from ..kernel.recorder import recorder_for

    for installed in (recorder_for(ip), proposals_for(ip), link_for(ip)):
        if installed is not None:
            installed.uninstall()
    for kind, names in (("line", ("agent", "agent_tools")), ("cell", ("agent",))):
        table = ip.magics_manager.magics[kind]
        for name in names:
            if getattr(table.get(name), "__self__", None) is magics:
                del table[name]
    registry = ip.magics_manager.registry
    if registry.get(type(magics).__name__) is magics:
        del registry[type(magics).__name__]
    if magics in ip.configurables:
        ip.configurables.remove(magics)


def get_magics(ip: Any) -> Any:
    """The ``AgentMagics`` of the shell ``ip``, or ``None`` when the extension is not loaded."""
    return getattr(ip, _INSTANCE_ATTRIBUTE, None)
