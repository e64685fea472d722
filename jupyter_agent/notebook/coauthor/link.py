"""The agent co-authors the open notebook: the kernel's end of the frontend extension's comm.

The IPython extension lives in the kernel, which cannot reach the notebook document; the
JupyterLab / Notebook 7 extension (``labextension/``, prebuilt in the wheel) holds it. They talk
over a comm on ``jupyter_agent.notebook``, opened by the frontend, in the typed messages of
``comm_protocol.py`` (the mirror of ``labextension/src/protocol.ts``):

- the frontend **announces** the notebook when it opens the comm and again after each change
  (cells: id, type, source, execution count, whether edited since run, output excerpts, unsaved
  edits included); ``NotebookLink.cells`` mirrors it;
- the kernel sends **operations** (``{"type": "op", "id": N, "op": ...}``: ``snapshot``,
  ``insert``, ``review``, ``edit``, ``delete``, ``run_start``, ``outputs``, ``run_end``,
  ``undo``, and for the undo journal ``peek`` and ``relabel``); the frontend applies each
  through the notebook model — as a user's edit, never by rewriting the file, never through a
  collaboration room — and replies (``{"type": "reply", "id": N, "ok": ..., "cells": [...]}``).
  It also keeps the undo journal of cell changes, per ``%%agent`` cell, so ``%agent undo`` works
  across a kernel restart while the notebook is open (``peek`` reads its newest entry,
  ``relabel`` names a finished turn's entry after its cell).

While a ``%%agent`` cell runs, the kernel's main thread is busy, so comm messages reach it only
when something polls the shell socket (``kernel_comm.py``). An operation is sent and its reply
awaited *on the main thread* (the session's bridge, as ``run_python`` runs its code), polling
through the cell's ``KernelCommPoller``; waiting for the user to accept or reject an edit is done
on the background loop instead, the pump's idle polling delivering the answer.

What goes over the link lives next to it: the cell tools the model calls (``cell_tools.py``),
running a cell and capturing its outputs (``cell_run.py``), and the review of an ``edit_cell`` or
``run_cell`` in the page before it acts (``review.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ...approvals import asker
from ...errors import FrontendError
from ..runtime.bridge import MainThreadBridge
from ..runtime.kernel_comm import KernelCommPoller, active_poller, unattended_kernel
from ..runtime.services import register, service, unregister
from .comm_protocol import (
    HELLO_TARGET,
    TARGET,
    CellInfo,
    CellType,
    InsertOp,
    KernelHello,
    OperationBody,
    RelabelOp,
    Reply,
)

#: Seconds the frontend has to answer an operation.
EXCHANGE_TIMEOUT_S = 15.0


#: What a cell tool says when the page that ran the ``%%agent`` cell has gone away.
PAGE_GONE = (
    "the notebook page that ran this %%agent cell went away (closed, reloaded or its kernel "
    "changed), so the agent cannot read or change its cells in this turn; run the cell again "
    "from the open page"
)
#: ... and when that page never connected while others did.
PAGE_NOT_CONNECTED = (
    "the notebook page that ran this %%agent cell is not connected to the agent (another "
    "page or notebook on this kernel is, but the agent works only in the page that ran the "
    "cell); reload that page, or run the cell from a page with the extension"
)


@dataclass
class NotebookPage:
    """One page (a frontend's notebook panel) connected over its own comm: the client session it
    belongs to — the ``session`` of every message its kernel connection sends, the same as in
    the ``execute_request`` of a cell it runs — and the notebook it last announced."""

    comm: Any
    session: str
    path: str = ""
    cells: list[CellInfo] = field(default_factory=list)
    #: When it last sent something (a rising count): the most recently active page is the
    #: largest.
    active: int = 0


T = TypeVar("T")

#: True on the main thread while an outside agent's call (``%agent serve``) does its work there:
#: there is no turn, so its operations go to ``NotebookLink.served_page()``, never to the page
#: of whatever message the kernel handled last.
_SERVED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jupyter_agent_served_call", default=False
)


def for_caller(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn``, to run on the main thread for the call being made here (the background loop):
    an outside client's (``approvals.asker`` set) works in the served page."""
    if asker.get() is None:
        return fn

    def served() -> T:
        token = _SERVED.set(True)
        try:
            return fn()
        finally:
            _SERVED.reset(token)

    return served


class NotebookLink:
    """The kernel's end of the comms with the notebook frontends (one link per shell).

    Every page that opens the comm is kept, by its client session; a turn's operations go to the
    page whose ``execute_request`` started it (``page()``), never to whichever connected last.
    An outside agent's call through ``%agent serve`` has no turn: its operations (and the review
    of its ``edit_cell``/``run_cell``) go to ``served_page()``.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.kernel: Any = getattr(shell, "kernel", None)
        #: The connected pages, by comm id, oldest first.
        self.pages: dict[str, NotebookPage] = {}
        self._replies: dict[int, Reply] = {}
        #: The operations ``request`` waits for on the main thread: only their replies are kept.
        self._awaited: set[int] = set()
        self._waiters: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        #: The comm each operation waited for was sent on (to fail it when that page leaves).
        self._sent_on: dict[int, str] = {}
        self._ids = itertools.count(1)
        self._activity = itertools.count(1)
        #: The client session of the page that ran ``%agent serve`` (``serve_from``), if any.
        self.serve_session: str | None = None
        self._turn_message: str | None = None
        self._turn_label = ""
        self._turn_cell: str | None = None
        self._changed_in_turn = False
        self._last_inserted: str | None = None
        self._ran_in_turn = False
        self._installed = False
        #: Client sessions whose every page has left (their cells' tools fail at once).
        self._left: set[str] = set()
        #: Called with ``True`` when a frontend connects, ``False`` when it leaves.
        self.on_change: list[Callable[[bool], None]] = []

    # -- installing ------------------------------------------------------------------------------

    def install(self) -> bool:
        """Register the comm target and say hello to open notebooks; ``False`` outside a kernel."""
        if self.kernel is None or getattr(self.kernel, "comm_manager", None) is None:
            return False
        self.kernel.comm_manager.register_target(TARGET, self._opened)
        register(self.shell, self)
        self._installed = True
        with contextlib.suppress(Exception):  # no frontend listening: nobody connects
            from comm import create_comm

            version: KernelHello = {"version": 1}
            hello = create_comm(target_name=HELLO_TARGET, data=version)
            hello.close()
        return True

    def uninstall(self) -> None:
        if self._installed:
            with contextlib.suppress(Exception):
                self.kernel.comm_manager.unregister_target(TARGET, self._opened)
            self._installed = False
        pages, self.pages = list(self.pages.values()), {}
        for page in pages:
            with contextlib.suppress(Exception):
                page.comm.close()
        if pages:
            self._changed(False)
        unregister(self.shell, self)

    @property
    def connected(self) -> bool:
        """Whether any notebook page is connected (the running cell's: ``page()``)."""
        return bool(self.pages)

    def _session(self) -> str:
        """The client session of the message the kernel is handling (main thread): the page
        that ran the cell, for an ``execute_request``."""
        parent: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            parent = self.kernel.get_parent() or {}
        return str((parent.get("header") or {}).get("session") or "")

    def page(self) -> NotebookPage | None:
        """The page that ran the running cell (main thread); ``None`` if it is not connected.

        Outside a request from a client (a script, a test calling in directly), the only page
        connected, if there is exactly one."""
        if _SERVED.get():
            return self.served_page()
        session = self._session()
        found = None
        for page in self.pages.values():
            if page.session == session:
                found = page  # the newest of that client's (one client, two views)
        if found is None and not session and len(self.pages) == 1:
            found = next(iter(self.pages.values()))
        return found

    def served_page(self) -> NotebookPage | None:
        """Where an outside agent's call works: the page that ran ``%agent serve`` while it is
        connected (the newest of that client's), else the most recently active page."""
        pages = list(self.pages.values())
        own = [page for page in pages if page.session == self.serve_session]
        return max(own or pages, key=lambda page: page.active, default=None)

    def serve_from(self, serving: bool) -> None:
        """Remember the page running this cell as the one ``%agent serve`` runs in (main
        thread), or forget it as the server stops."""
        self.serve_session = self._session() if serving else None

    @property
    def comm(self) -> Any:
        page = self.page()
        return page.comm if page is not None else None

    @property
    def path(self) -> str:
        page = self.page()
        return page.path if page is not None else ""

    @property
    def cells(self) -> list[CellInfo]:
        page = self.page()
        return page.cells if page is not None else []

    # -- messages from the frontend (main thread) ---------------------------------------------

    def _opened(self, comm: Any, message: dict[str, Any]) -> None:
        session = str((message.get("header") or {}).get("session") or "")
        page = NotebookPage(comm, session, active=next(self._activity))
        self.pages[str(comm.comm_id)] = page
        self._left.discard(session)
        comm.on_msg(lambda message: self._received(page, message))
        comm.on_close(lambda _message: self._closed(comm))
        self._take_cells(page, message.get("content", {}).get("data", {}))
        self._changed(True)

    def _closed(self, comm: Any) -> None:
        comm_id = str(getattr(comm, "comm_id", ""))
        page = self.pages.pop(comm_id, None)
        if page is None:
            return
        if not any(other.session == page.session for other in self.pages.values()):
            self._left.add(page.session)
        gone: Reply = {"type": "reply", "ok": False, "error": PAGE_GONE}
        for ident, sent_on in list(self._sent_on.items()):
            if sent_on != comm_id:
                continue
            del self._sent_on[ident]
            if ident in self._awaited:
                self._replies[ident] = gone
            waiter = self._waiters.pop(ident, None)
            if waiter is not None:
                with contextlib.suppress(RuntimeError):
                    waiter[0].call_soon_threadsafe(_settle, waiter[1], gone)
        self._changed(bool(self.pages))

    def _received(self, page: NotebookPage, message: dict[str, Any]) -> None:
        data = message.get("content", {}).get("data", {})
        if not isinstance(data, dict):
            return
        page.active = next(self._activity)
        self._take_cells(page, data)
        if data.get("type") != "reply" or not isinstance(data.get("id"), int):
            return
        ident: int = data["id"]
        reply = cast(Reply, data)  # a typed view: each use still checks what the page sent
        if self._sent_on.get(ident) != str(getattr(page.comm, "comm_id", "")):
            return  # an answer from a page the operation was not sent to
        self._sent_on.pop(ident, None)
        waiter = self._waiters.pop(ident, None)
        if waiter is None:
            if ident in self._awaited:
                self._replies[ident] = reply
            return
        loop, future = waiter
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, future, reply)

    def _claim(self, message: dict[str, Any]) -> bool:
        """Take a message on a page's comm straight from the poller while an operation waits
        for its reply: the kernel's comm dispatch would fire the shell's ``pre_execute`` and
        ``post_execute`` events for it (figure 20's run_start round trip paid ~0.8 ms there)."""
        content = message.get("content") or {}
        if (message.get("header") or {}).get("msg_type") != "comm_msg":
            return False
        page = self.pages.get(str(content.get("comm_id", "")))
        if page is None:
            return False
        self._received(page, message)
        return True

    def _take_cells(self, page: NotebookPage, data: dict[str, Any]) -> None:
        cells = data.get("cells")
        if isinstance(cells, list):  # typed views of the page's cells, checked at each use
            page.cells = [cast(CellInfo, cell) for cell in cells if isinstance(cell, dict)]
        if isinstance(data.get("path"), str):
            page.path = data["path"]

    def _changed(self, connected: bool) -> None:
        for callback in list(self.on_change):
            with contextlib.suppress(Exception):
                callback(connected)

    # -- operations (main thread) -------------------------------------------------------------

    def _turn_page(self) -> NotebookPage:
        page = self.page()
        if page is not None:
            return page
        if not _SERVED.get() and self._session() in self._left:
            raise FrontendError(PAGE_GONE)
        if not self.pages:
            raise FrontendError("no notebook frontend is connected")
        raise FrontendError(PAGE_NOT_CONNECTED)

    def send(self, op: OperationBody, *, answer: bool = True) -> int:
        """Send an operation to the running cell's page; its id. ``answer=False``: nobody waits
        for it, the frontend sends no reply (it sent the whole notebook with each)."""
        page = self._turn_page()
        ident = next(self._ids)
        # the Envelope, then the operation, then (a change) its Stamp: comm_protocol.py
        message: dict[str, object] = {"type": "op", "id": ident, **op}
        if "turn" in op:  # a change: the frontend's journal dates its entry (kernel clock),
            # keys it by the turn and names it by the %%agent cell's own number at undo time
            message.update(at=time.time(), turn_id=self._turn_message or "")
            self._changed_in_turn = True
        if not answer:
            message["noreply"] = True
        else:
            self._sent_on[ident] = str(getattr(page.comm, "comm_id", ""))
        page.comm.send(message)
        return ident

    def request(
        self,
        op: OperationBody,
        *,
        timeout: float = EXCHANGE_TIMEOUT_S,
        stop: Callable[[], bool] | None = None,
    ) -> Reply:
        """Send ``op`` and handle comm messages until its reply (on the main thread)."""
        ident = self.send(op)
        self._awaited.add(ident)
        poller = active_poller(self.kernel)
        own = poller is None
        if own:
            poller = KernelCommPoller(self.kernel)
        assert poller is not None
        try:
            if not poller.available:
                raise FrontendError("the notebook's answers cannot reach this kernel")
            deadline = time.monotonic() + timeout
            while ident not in self._replies:
                if stop is not None and stop():
                    raise FrontendError("stopped")
                if time.monotonic() > deadline:
                    raise FrontendError(f"the notebook did not answer within {timeout:g} s")
                poller.poll(0.05, claim=self._claim)
            reply = self._replies.pop(ident)
        finally:
            self._awaited.discard(ident)
            self._sent_on.pop(ident, None)
            self._replies.pop(ident, None)  # stopped or timed out: a late reply is not kept
            if own:
                poller.close()
        if not reply.get("ok"):
            raise FrontendError(str(reply.get("error") or "the notebook refused"))
        return reply

    async def request_async(self, bridge: MainThreadBridge, op: OperationBody) -> Reply:
        """Send ``op`` and wait for its reply on the background loop (a user's decision)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Reply] = loop.create_future()

        def send() -> int:
            ident = self.send(op)
            self._waiters[ident] = (loop, future)
            return ident

        ident = await bridge.call_on_main(for_caller(send))
        try:
            reply = await future
        finally:
            self._waiters.pop(ident, None)
            self._sent_on.pop(ident, None)
        if not reply.get("ok"):
            raise FrontendError(str(reply.get("error") or "the notebook refused"))
        return reply

    def turn(self) -> tuple[str, str | None]:
        """The running cell's undo label and id (main thread); a new cell starts a new turn.

        The label is taken once, as the turn starts: each ``run_cell`` raises the kernel's
        count, and a label read later made one turn several undo entries."""
        parent: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            parent = self.kernel.get_parent() or {}
        message = str((parent.get("header") or {}).get("msg_id", ""))
        cell_id = (parent.get("metadata") or {}).get("cellId")
        if message != self._turn_message:
            self._turn_message = message
            self._last_inserted = None
            self._ran_in_turn = False
            self._changed_in_turn = False
            count = getattr(getattr(self.shell, "displayhook", None), "prompt_count", None)
            self._turn_label = f"cell {count}" if isinstance(count, int) else "the last agent cell"
            self._turn_cell = cell_id if isinstance(cell_id, str) else None
        return self._turn_label, self._turn_cell

    def finish_turn(self, label: str) -> None:
        """Name the turn's undo entry in the page's journal as its ``%%agent`` cell shows itself
        now it ends (main thread): the number is known only then, the cells it ran took theirs
        before it."""
        parent: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            parent = self.kernel.get_parent() or {}
        running = str((parent.get("header") or {}).get("msg_id", ""))
        if running != self._turn_message or not self._changed_in_turn:
            return  # this cell changed no cells (the last turn that did was another's)
        if label == self._turn_label:
            return
        with contextlib.suppress(FrontendError):
            relabel: RelabelOp = {
                "op": "relabel",
                "turn_id": self._turn_message or "",
                "label": label,
            }
            self.send(relabel, answer=False)

    def next_count(self) -> int:
        """The execution count of the next cell ``run_cell`` runs (main thread).

        The running ``%%agent`` cell's own number is decided when it ends (the kernel replies
        with ``execution_count - 1``), so one number is kept free above the cells it ran: they
        count on from the cell before it, the ``%%agent`` cell shows the number after theirs.
        """
        shell = self.shell
        count = int(shell.execution_count) - (1 if self._ran_in_turn else 0)
        shell.execution_count = count + 2
        self._ran_in_turn = True
        return count

    def insert(self, source: str, cell_type: CellType, after: str | None) -> Reply:
        label, running = self.turn()
        where = after or self._last_inserted or running
        op: InsertOp = {
            "op": "insert",
            "turn": label,
            "source": source,
            "cell_type": cell_type,
            "after": where,
        }
        reply = self.request(op)
        self._last_inserted = str(reply["cell_id"])
        return reply


def _settle(future: asyncio.Future[Reply], data: Reply) -> None:
    if not future.done():
        future.set_result(data)


def link_for(shell: Any) -> NotebookLink | None:
    """The link installed on ``shell``, if any."""
    return service(shell, NotebookLink)


def newest_cell_change(shell: Any) -> tuple[str, float] | None:
    """The ``%%agent`` cell whose cell changes ``%agent undo`` would take back, and when the
    first of them was made (``time.time()``); ``None`` when there are none."""
    link = link_for(shell)
    if link is None or not link.connected:
        return None
    try:
        reply = link.request({"op": "peek"})
    except FrontendError:
        return None
    if not isinstance(reply.get("turn"), str):
        return None
    at = reply.get("at")
    return reply["turn"], float(at) if isinstance(at, int | float) else 0.0


@dataclass(frozen=True, slots=True)
class CellUndo:
    """What ``%agent undo`` did to the notebook's cells, and the ``%%agent`` cell it undid."""

    label: str
    message: str


def undo_cells(shell: Any) -> CellUndo | None:
    """``%agent undo``'s cell half: what it put back, or ``None`` with nothing to undo."""
    link = link_for(shell)
    if link is None or not link.connected:
        return None
    try:
        reply = link.request({"op": "undo"})
    except FrontendError as exc:
        return CellUndo("", f"The notebook's cells could not be restored: {exc}")
    if not reply.get("undone"):
        return None
    return CellUndo(str(reply.get("turn", "")), str(reply.get("message", "")))


def notebook_connected(shell: Any, wait: float = 3.0) -> bool:
    """Whether a notebook frontend with the extension is connected to ``shell``'s kernel.

    A frontend connects when the extension loads, but its comm waits behind cells already
    queued (Run All): where a person's frontend drives the kernel, wait up to ``wait`` seconds,
    reading the comm messages ahead of those cells. nbclient's kernels are not waited for.
    """
    link = link_for(shell)
    if link is None:
        return False
    if link.connected or unattended_kernel(shell) or wait <= 0:
        return link.connected
    poller = active_poller(link.kernel)
    own = poller is None
    if own:
        poller = KernelCommPoller(link.kernel)
    assert poller is not None
    try:
        deadline = time.monotonic() + wait
        while poller.available and not link.connected and time.monotonic() < deadline:
            poller.poll(0.05)
    finally:
        if own:
            poller.close()
    return link.connected


def coauthoring_state(shell: Any) -> str:
    """The ``%agent config`` row: whether the agent works in the notebook itself."""
    link = link_for(shell)
    if link is None or not link.connected:
        return "off (no frontend extension)"
    page = link.page()
    others = len(link.pages) - (1 if page is not None else 0)
    if page is None:
        return (
            f"off in this page ({others} other page(s) connected; the agent works only in "
            "the page that runs the %%agent cell)"
        )
    more = f"; {others} other page(s) connected, the agent works in this one" if others else ""
    return f"on ({page.path or 'the open notebook'}{more})"
