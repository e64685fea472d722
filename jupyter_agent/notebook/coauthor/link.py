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

The tools (``notebook_cells``, ``insert_cell``, ``edit_cell``, ``run_cell``, ``delete_cell``)
are on the session's toolbox only while a frontend is connected; without one, ``propose_cell``
works as before. ``run_cell`` runs the cell's code on the main thread now, captures its outputs
as nbformat outputs (streams, rich displays, matplotlib figures, errors), places them in the cell
with an execution count and returns them to the model, images as images. It obeys
``tool_timeout`` (a watchdog interrupts the code) and Stop (the frontend interrupts the kernel
when the agent's Stop button is pressed during a run).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import contextvars
import itertools
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from ...approvals import ApprovalHandler, ApprovalRequest, Decision, asker
from ...errors import FrontendError
from ...tools.base import IMAGE_MEDIA_TYPES, BuiltinTool, Image, ToolFailure
from ...tools.context import ToolContext
from ..runtime.bridge import MainThreadBridge
from ..runtime.executor import parse_cell, run_cell_code
from ..runtime.figures import new_figures, open_figures
from ..runtime.kernel_comm import KernelCommPoller, active_poller, unattended_kernel
from ..runtime.services import register, service, unregister
from ..text import clip
from .comm_protocol import (
    HELLO_TARGET,
    TARGET,
    CellInfo,
    CellType,
    DeleteOp,
    EditOp,
    InsertOp,
    KernelHello,
    OperationBody,
    RelabelOp,
    Reply,
    ReviewOp,
    RunEndOp,
    RunStartOp,
)
from .review_diff import diff_lines, edited

if TYPE_CHECKING:
    pass

#: Seconds the frontend has to answer an operation.
EXCHANGE_TIMEOUT_S = 15.0
#: Seconds between progress updates of a running cell's outputs.
PROGRESS_INTERVAL_S = 0.25
#: Characters of a cell run's outputs returned to the model.
MAX_RUN_TEXT = 10_000
#: Images a cell run returns to the model at most.
MAX_RUN_IMAGES = 5
#: Characters of a cell's source ``notebook_cells`` shows.
MAX_LISTED_SOURCE = 4_000
#: Characters of a cell ``insert_cell`` or ``edit_cell`` may hold.
MAX_CELL_CHARS = 100_000

TOOL_NAMES = ("notebook_cells", "insert_cell", "edit_cell", "run_cell", "delete_cell")


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


#: What the page says when a cell no longer holds the source the user approved.
CHANGED_SINCE_APPROVED = "changed since it was approved"


def run_changed(cell_id: str) -> str:
    return (
        f"cell {cell_id} was edited after the user approved running it, so nothing ran; call "
        "run_cell again to ask the user about its new source"
    )


def _settle(future: asyncio.Future[Reply], data: Reply) -> None:
    if not future.done():
        future.set_result(data)


def link_for(shell: Any) -> NotebookLink | None:
    """The link installed on ``shell``, if any."""
    return service(shell, NotebookLink)


# -- running a cell ---------------------------------------------------------------------------


class _Timeout(Exception):
    pass


class CellRun:
    """Runs one cell's code on the main thread, collecting nbformat outputs as they come."""

    def __init__(self, shell: Any, progress: Callable[[list[dict[str, Any]]], None]) -> None:
        self.shell = shell
        self.outputs: list[dict[str, Any]] = []
        self._progress = progress
        self._sent_at = 0.0
        self._dirty = False

    # outputs ---------------------------------------------------------------------------------

    def _add(self, output: dict[str, Any]) -> None:
        self.outputs.append(output)
        self._tick()

    def stream(self, name: str, text: str) -> None:
        if not text:
            return
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
            self._tick()
        else:
            self._add({"output_type": "stream", "name": name, "text": text})

    def _tick(self) -> None:
        self._dirty = True
        now = time.monotonic()
        if now - self._sent_at >= PROGRESS_INTERVAL_S:
            self._sent_at = now
            self._dirty = False
            with contextlib.suppress(Exception):
                self._progress(self.outputs)

    def _display_hook(self, message: dict[str, Any]) -> dict[str, Any] | None:
        if message.get("msg_type") != "display_data":
            return message
        content = message.get("content") or {}
        self._add(
            {
                "output_type": "display_data",
                "data": dict(content.get("data") or {}),
                "metadata": dict(content.get("metadata") or {}),
            }
        )
        return None  # shown in the cell that ran, not in the %%agent cell

    # running ---------------------------------------------------------------------------------

    def run(self, source: str, count: int, timeout: float | None) -> bool:
        """Run ``source``; ``True`` unless it raised. A ``KeyboardInterrupt`` that is not the
        timeout's is raised again once the error output is recorded."""
        shell = self.shell
        figures_before = set(open_figures())
        publisher: Any = getattr(shell, "display_pub", None)
        hooked = getattr(publisher, "register_hook", None) is not None
        if hooked:
            publisher.register_hook(self._display_hook)
        watchdog = _Watchdog(timeout)
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")
        ok = True
        interrupted = False
        try:
            watchdog.start()
            try:
                self._execute(source, count)
            finally:
                watchdog.cancel()
        except KeyboardInterrupt as exc:
            ok = False
            if watchdog.fired:
                self._error(_Timeout(f"the cell ran longer than tool_timeout ({timeout:g} s)"))
            else:
                interrupted = True
                self._error(exc)
        except BaseException as exc:
            ok = False
            self._error(exc)
        finally:
            sys.stdout, sys.stderr = out, err
            if hooked:
                publisher.unregister_hook(self._display_hook)
        self._figures(figures_before)
        if interrupted:
            raise KeyboardInterrupt
        return ok

    def _execute(self, source: str, count: int) -> None:
        shell = self.shell
        code = shell.transform_cell(source) if hasattr(shell, "transform_cell") else source
        tree, last = parse_cell(code, f"<cell {count}>")
        value = run_cell_code(shell.user_ns, tree, last, f"<cell {count}>")
        if value is None:
            return
        data, metadata = shell.display_formatter.format(value)
        self._add(
            {
                "output_type": "execute_result",
                "execution_count": count,
                "data": data,
                "metadata": metadata,
            }
        )

    def _error(self, exc: BaseException) -> None:
        lines: list[str]
        try:
            lines = list(
                self.shell.InteractiveTB.structured_traceback(
                    type(exc), exc, exc.__traceback__, tb_offset=3
                )
            )
        except Exception:
            lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        self._add(
            {
                "output_type": "error",
                "ename": type(exc).__name__ if not isinstance(exc, _Timeout) else "TimeoutError",
                "evalue": str(exc),
                "traceback": lines,
            }
        )

    def _figures(self, before: set[int]) -> None:
        """Figures the code left open: shown in the cell (PNG) and closed, as inline does."""
        pyplot = sys.modules.get("matplotlib.pyplot")
        for figure in new_figures(before):
            with contextlib.suppress(Exception):
                data, metadata = self.shell.display_formatter.format(figure)
                if "image/png" not in data:
                    import io

                    buffer = io.BytesIO()
                    figure.savefig(buffer, format="png", bbox_inches="tight")
                    data = {
                        "image/png": base64.b64encode(buffer.getvalue()).decode(),
                        "text/plain": repr(figure),
                    }
                    metadata = {}
                self._add({"output_type": "display_data", "data": data, "metadata": metadata})
            if pyplot is not None:
                with contextlib.suppress(Exception):
                    pyplot.close(figure)

    def finish(self) -> None:
        if self._dirty:
            self._dirty = False


class _Stream:
    """``sys.stdout``/``sys.stderr`` while a cell runs: its text becomes stream outputs."""

    def __init__(self, run: CellRun, name: str) -> None:
        self._run = run
        self.name = name
        self.encoding = "utf-8"

    def write(self, text: str) -> int:
        self._run.stream(self.name, str(text))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class _Watchdog:
    """Interrupts the main thread (SIGINT) when a cell runs past its time."""

    def __init__(self, timeout: float | None) -> None:
        self.fired = False
        self._timer: threading.Timer | None = None
        if timeout is not None and timeout > 0 and timeout != float("inf"):
            margin = min(1.0, timeout * 0.1)
            self._timer = threading.Timer(timeout - margin, self._fire)
            self._timer.daemon = True
        self._main = threading.main_thread().ident

    def start(self) -> None:
        if self._timer is not None:
            self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        if self._main is not None:
            signal.pthread_kill(self._main, signal.SIGINT)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def outputs_for_model(outputs: list[dict[str, Any]], count: int) -> list[str | Image]:
    """A cell run's outputs as the model sees them: text (capped), then its images."""
    texts: list[str] = []
    images: list[Image] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(f"{output['name']}:\n{str(output['text']).rstrip()}")
        elif kind == "error":
            texts.append(f"error: {output['ename']}: {output['evalue']}")
        else:
            data = output.get("data") or {}
            for media_type in IMAGE_MEDIA_TYPES:
                encoded = data.get(media_type)
                if isinstance(encoded, str) and len(images) < MAX_RUN_IMAGES:
                    with contextlib.suppress(binascii.Error, ValueError):
                        images.append(Image(base64.b64decode(encoded), media_type))
                    break
            plain = data.get("text/plain")
            if isinstance(plain, list):
                plain = "".join(plain)
            label = "result" if kind == "execute_result" else "display"
            if isinstance(plain, str) and plain:
                texts.append(f"{label}:\n{plain}")
    head = f"Ran the cell as [{count}]."
    text = clip("\n\n".join([head, *texts]) if texts else f"{head} (no output)", MAX_RUN_TEXT)
    if images:
        text += f"\n\n({len(images)} image(s) shown in the cell, sent as images)"
    return [text, *images]


# -- the tools ------------------------------------------------------------------------------


def _describe(cells: Sequence[Mapping[str, object]]) -> str:
    if not cells:
        return "The notebook has no cells."
    parts = []
    for index, cell in enumerate(cells):
        kind = str(cell.get("cell_type", "code"))
        header = f"[{index}] id={cell.get('id')} {kind}"
        count = cell.get("execution_count")
        if kind == "code":
            header += f", ran as [{count}]" if count is not None else ", not run"
            if cell.get("edited"):
                header += ", edited since it ran"
        if cell.get("agent"):
            header += ", written by you (the agent)"
        body = clip(str(cell.get("source", "")), MAX_LISTED_SOURCE)
        part = f"{header}\n{body}"
        if cell.get("outputs"):
            part += f"\n--- outputs ---\n{cell['outputs']}"
        parts.append(part)
    return "\n\n".join(parts)


class _NotebookTool(BuiltinTool):
    def __init__(self, context: ToolContext, link: NotebookLink, bridge: MainThreadBridge) -> None:
        super().__init__(context)
        self.link = link
        self.bridge = bridge

    async def _on_main(self, fn: Callable[[], Any]) -> Any:
        if not self.link.connected:
            raise ToolFailure("no notebook frontend is connected (the notebook was closed)")
        try:
            return await self.bridge.call_on_main(for_caller(fn))
        except FrontendError as exc:
            raise ToolFailure(str(exc)) from None

    def _stop(self) -> bool:
        return self.bridge.stop_requested


def _text(args: dict[str, object], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolFailure(f"'{name}' must be a string")
    if len(value) > MAX_CELL_CHARS:
        raise ToolFailure(f"'{name}' is too long (at most {MAX_CELL_CHARS} characters)")
    return value


class NotebookCellsTool(_NotebookTool):
    name = "notebook_cells"
    description = (
        "The user's open notebook as they see it now, unsaved edits included: each cell's id, "
        "type, source, execution count, whether it was edited since it ran, and an excerpt of "
        "its outputs. Use the ids with insert_cell, edit_cell, run_cell."
    )
    input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    async def execute(self, args: dict[str, object]) -> str:
        reply = await self._on_main(lambda: self.link.request({"op": "snapshot"}))
        cells = reply.get("cells")
        return _describe(cells if isinstance(cells, list) else self.link.cells)


class InsertCellTool(_NotebookTool):
    name = "insert_cell"
    description = (
        "Insert a new cell into the user's open notebook (it appears at once, marked as yours). "
        "By default it goes after the running %%agent cell, after the cells you inserted before "
        "in this answer, in order; 'after' names a cell id to insert after. It runs nothing "
        "(use run_cell). Returns the new cell's id."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "The cell's source"},
            "cell_type": {"type": "string", "enum": ["code", "markdown"], "default": "code"},
            "after": {"type": "string", "description": "Insert after the cell with this id"},
        },
        "required": ["source"],
    }

    async def execute(self, args: dict[str, object]) -> str:
        source = _text(args, "source")
        assert source is not None
        cell_type = args.get("cell_type", "code")
        if cell_type not in ("code", "markdown"):
            raise ToolFailure("'cell_type' must be 'code' or 'markdown'")
        kind: CellType = "markdown" if cell_type == "markdown" else "code"
        after = _text(args, "after", required=False)
        reply = await self._on_main(lambda: self.link.insert(source, kind, after))
        return f"Inserted {cell_type} cell {reply['cell_id']} (at position {reply.get('index')})."


class EditCellTool(_NotebookTool):
    name = "edit_cell"
    description = (
        "Replace old_string by new_string in one cell of the user's open notebook. old_string "
        "must occur exactly once in the cell's current source (read it with notebook_cells). "
        "The user sees the edit as a diff and accepts or rejects it."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "cell_id": {"type": "string"},
            "old_string": {"type": "string", "description": "Text to replace (exactly once)"},
            "new_string": {"type": "string", "description": "Its replacement"},
        },
        "required": ["cell_id", "old_string", "new_string"],
    }

    async def execute(self, args: dict[str, object]) -> str:
        cell_id, old, new = (_text(args, name) for name in ("cell_id", "old_string", "new_string"))
        if not old:
            raise ToolFailure("'old_string' must not be empty")
        assert cell_id is not None and new is not None
        pin = approved("edit_cell", cell_id)
        label = await self._on_main(lambda: self.link.turn()[0])
        op: EditOp = {
            "op": "edit",
            "turn": label,
            "cell_id": cell_id,
            "old_string": old,
            "new_string": new,
        }
        if pin is not None:  # the accepted diff, on the source it showed, or nothing
            op["expect"] = pin.source
        await self._on_main(lambda: self.link.request(op))
        return f"Edited cell {cell_id}."


class RunCellTool(_NotebookTool):
    name = "run_cell"
    description = (
        "Run one code cell of the user's open notebook in their kernel now, as if they ran it: "
        "its outputs (text, tables, plots, errors) appear in that cell with an execution count "
        "and are returned to you, plots as images."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"cell_id": {"type": "string"}},
        "required": ["cell_id"],
    }

    def __init__(
        self,
        context: ToolContext,
        link: NotebookLink,
        bridge: MainThreadBridge,
        timeout: Callable[[], float | None],
    ) -> None:
        super().__init__(context, link, bridge)
        self.timeout = timeout

    async def execute(self, args: dict[str, object]) -> list[str | Image]:
        cell_id = _text(args, "cell_id")
        assert cell_id is not None
        limit = self.timeout()
        pin = approved("run_cell", cell_id)
        expect = pin.source if pin is not None else None
        result: tuple[bool, list[dict[str, Any]], int] = await self._on_main(
            lambda: run_cell_now(self.link, cell_id, limit, expect=expect)
        )
        ok, outputs, count = result
        parts = outputs_for_model(outputs, count)
        if not ok:
            raise ToolFailure(str(parts[0]))
        return parts


def run_cell_now(
    link: NotebookLink, cell_id: str, timeout: float | None, *, expect: str | None = None
) -> tuple[bool, list[dict[str, Any]], int]:
    """On the main thread: run cell ``cell_id``, its outputs placed in it as they come.

    ``expect``: the source the user approved; the page refuses to start the run when the cell
    holds anything else, and the kernel runs ``expect`` itself, never what a reply says."""
    label, running = link.turn()
    if cell_id == running:
        raise FrontendError("that is the running %%agent cell; run_cell runs other cells")
    op: RunStartOp = {"op": "run_start", "turn": label, "cell_id": cell_id}
    if expect is not None:
        op["expect"] = expect
    try:
        start = link.request(op)
    except FrontendError as exc:
        if expect is not None and CHANGED_SINCE_APPROVED in str(exc):
            raise FrontendError(run_changed(cell_id)) from None
        raise
    source = str(start.get("source", ""))
    if expect is not None and source != expect:
        with contextlib.suppress(FrontendError):
            link.send({"op": "run_end", "cell_id": cell_id, "outputs": []}, answer=False)
        raise FrontendError(run_changed(cell_id))
    count = link.next_count()

    def progress(outputs: list[dict[str, Any]]) -> None:
        link.send({"op": "outputs", "cell_id": cell_id, "outputs": outputs}, answer=False)

    run = CellRun(link.shell, progress)
    try:
        ok = run.run(source, count, timeout)
    finally:
        end: RunEndOp = {"op": "run_end", "cell_id": cell_id, "outputs": run.outputs}
        end["execution_count"] = count
        # Not waited for: the comm delivers in order, so whatever the agent asks next sees
        # the outputs placed (waiting cost a second round trip, benchmark figure 20).
        with contextlib.suppress(FrontendError):
            link.send(end, answer=False)
    return ok, run.outputs, count


class DeleteCellTool(_NotebookTool):
    name = "delete_cell"
    description = "Delete one cell of the user's open notebook (%agent undo puts it back)."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"cell_id": {"type": "string"}},
        "required": ["cell_id"],
    }
    destructive: ClassVar[bool] = True

    async def execute(self, args: dict[str, object]) -> str:
        cell_id = _text(args, "cell_id")
        assert cell_id is not None
        label, running = await self._on_main(self.link.turn)
        if cell_id == running:
            raise ToolFailure("that is the running %%agent cell; it cannot be deleted now")
        op: DeleteOp = {"op": "delete", "turn": label, "cell_id": cell_id}
        await self._on_main(lambda: self.link.request(op))
        return f"Deleted cell {cell_id}."


@dataclass(frozen=True, slots=True)
class ApprovedCell:
    """What the user approved for one call: the cell's source as the prompt showed it
    (``run_cell``) or as the diff was computed on (``edit_cell``). The tool acts on exactly
    that, or refuses: an approval names code, not a cell id."""

    tool: str
    cell_id: str
    source: str


#: Set by the approval handler as the user says yes; read by the same call's tool. The gate asks
#: and then runs the call in one task, so a context variable belongs to that call alone.
_APPROVED: contextvars.ContextVar[ApprovedCell | None] = contextvars.ContextVar(
    "jupyter_agent_approved_cell", default=None
)


def approved(tool: str, cell_id: str) -> ApprovedCell | None:
    """The approval this call of ``tool`` on ``cell_id`` was given, if it was asked about."""
    pin = _APPROVED.get()
    if pin is None or pin.tool != tool or pin.cell_id != cell_id:
        return None
    _APPROVED.set(None)
    return pin


def review_approvals(
    inner: ApprovalHandler, shell: Any, bridge: MainThreadBridge
) -> ApprovalHandler:
    """``inner``, except that ``edit_cell`` is asked about as a diff in the notebook, and
    ``run_cell`` with the cell's source as it will run (fetched from the page before asking)."""

    async def handler(request: ApprovalRequest) -> Decision:
        link = link_for(shell)
        _APPROVED.set(None)
        if request.name not in ("edit_cell", "run_cell") or link is None or not link.connected:
            return await inner(request)
        if request.name == "run_cell":
            return await _ask_run(inner, request, link, bridge)
        return await _ask_edit(request, link, bridge)

    return handler


async def _cell_source(link: NotebookLink, bridge: MainThreadBridge, cell_id: str) -> str | None:
    """Cell ``cell_id``'s source as the running cell's page holds it now (unsaved edits too)."""
    reply = await link.request_async(bridge, {"op": "snapshot"})
    cells = reply.get("cells")
    listed = cells if isinstance(cells, list) else []
    cell = next((c for c in listed if isinstance(c, dict) and c.get("id") == cell_id), None)
    if cell is None or not isinstance(cell.get("source"), str):
        return None
    return str(cell["source"]) if cell.get("cell_type") == "code" else None


async def _ask_edit(
    request: ApprovalRequest, link: NotebookLink, bridge: MainThreadBridge
) -> Decision:
    """Show the edit as a diff in the cell, made here through the one sanitising function
    (``review_diff``), over the source it was computed on; an accepted edit applies to that."""
    args = request.input
    cell_id, old, new = (
        str(args.get(name, "")) for name in ("cell_id", "old_string", "new_string")
    )
    try:
        before = await _cell_source(link, bridge, cell_id)
        if before is None:
            return Decision(False, f"the edit could not be shown: no code cell with id {cell_id}")
        try:
            after = edited(before, old, new)
        except ValueError as exc:
            return Decision(False, f"the edit could not be shown: {exc}")
        op: ReviewOp = {
            "op": "review",
            "cell_id": cell_id,
            "before": before,
            "lines": diff_lines(before, after),
        }
        reply = await link.request_async(bridge, op)
    except FrontendError as exc:
        return Decision(False, f"the edit could not be shown: {exc}")
    if reply.get("accepted"):
        _APPROVED.set(ApprovedCell("edit_cell", cell_id, before))
        return Decision(True)
    return Decision(False, "the user rejected the edit in the notebook")


async def _ask_run(
    inner: ApprovalHandler, request: ApprovalRequest, link: NotebookLink, bridge: MainThreadBridge
) -> Decision:
    """Ask about a ``run_cell`` showing the code that will run, as the page holds it now."""
    cell_id = str(request.input.get("cell_id"))
    try:
        source = await _cell_source(link, bridge, cell_id)
    except FrontendError as exc:
        return Decision(False, f"the cell could not be shown: {exc}")
    if source is None:
        return Decision(False, f"there is no code cell with id {cell_id} to show the user")
    shown = ApprovalRequest(
        request.call_id, request.name, {"cell_id": cell_id, "source": source}, request.reason
    )
    decision = await inner(shown)
    if decision.approved:
        _APPROVED.set(ApprovedCell("run_cell", cell_id, source))
    return decision


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
