"""Where a cell runs: the kernel's main shell, or a subshell beside it (ipykernel 7, JEP 91).

ipykernel 7 runs an ``execute_request`` that carries a ``subshell_id`` in its header on that
subshell's own thread (named ``subshell-<id>``), at once, while the main shell may still be
running a cell. Such a cell shares the user's namespace and the IPython shell with the running
one, so what it does must not disturb that cell: the ``%%agent`` cell answered there reads, and
does not run code (``front/ask_beside.py``); the cell recorder keeps it out of the running cell's
record (``kernel/recorder.py``). The kernel's main thread is the one that runs the main shell,
and the only one a ``KeyboardInterrupt`` (the kernel's interrupt) reaches.

``answer_where_sent`` touches a private detail of ipykernel 7.4 on purpose: the kernel's shell
channel thread (``Kernel.shell_channel_thread_main``) routes a comm message through the comm's
``_reply_subshell_for``, which reads ``_reply_subshell_id``/``_reply_subshell_ids`` that
``BaseComm.publish_msg`` sets to the subshell that last published. 7.4 has no public way to
set or clear that route (not on the comm, the comm manager, the kernel or the subshell manager),
and without clearing it the answer's Stop button cannot be clicked. It is read defensively: a
kernel without those attributes (older, or a future one that changes them) is left as it is, and
``test_stop_ends_the_answer_and_leaves_the_running_cell`` fails if the click stops arriving.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: ipykernel's name for a subshell's thread: ``subshell-<subshell_id>`` (``SubshellThread``).
SUBSHELL_THREAD_PREFIX = "subshell-"


def on_subshell_thread() -> bool:
    """Whether the calling thread is a kernel subshell's (not the main shell's, nor another)."""
    return threading.current_thread().name.startswith(SUBSHELL_THREAD_PREFIX)


def request_header(shell: Any) -> dict[str, Any]:
    """The header of the shell request this thread runs (``{}`` outside a kernel, or with an
    older kernel whose ``get_parent`` takes no channel)."""
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)
    if get_parent is None:
        return {}
    try:
        header = get_parent("shell").get("header", {})
    except Exception:  # an older kernel's signature, or no request
        return {}
    return header if isinstance(header, dict) else {}


def subshell_id(shell: Any) -> str | None:
    """The id of the subshell whose cell is running on this thread, or ``None`` on the main
    shell, outside a kernel, or with a kernel that has no subshells."""
    if not on_subshell_thread():
        return None
    found = request_header(shell).get("subshell_id")
    return found if isinstance(found, str) and found else None


def main_shell_busy(shell: Any) -> bool:
    """Whether the kernel's main shell is running a cell now (best effort: ipykernel 7 holds a
    lock for the length of each main-shell request)."""
    lock = getattr(getattr(shell, "kernel", None), "_main_asyncio_lock", None)
    locked = getattr(lock, "locked", None)
    return bool(locked()) if callable(locked) else False


def answer_where_sent(widget: Any) -> None:
    """Let ``widget``'s messages be handled on the subshell the frontend sends them to.

    ipykernel 7.4 routes a comm message to the subshell that last published on that comm — for
    a widget a cell answered on a subshell just showed, that cell's own subshell, whose thread is
    busy pumping the answer and reads no messages until it ends. Forgetting it sends a click
    (the Stop button) where the frontend addressed it: JupyterLab 4's own widget subshell, idle,
    which handles it at once. A kernel without that routing is left as it is.
    """
    comm = getattr(widget, "comm", None)
    lock = getattr(comm, "_reply_subshell_lock", None)
    if comm is None or lock is None:
        return
    with lock:
        vars(comm).pop("_reply_subshell_id", None)
        routes = getattr(comm, "_reply_subshell_ids", None)
        if isinstance(routes, dict):
            routes.clear()


#: The interpreter's thread switch interval while a main-shell cell or an answer beside one runs
#: (seconds).
BESIDE_SWITCH_INTERVAL_S = 0.0001
_beside_lock = threading.Lock()
_beside_count = 0
_saved_interval = 0.0
_applied_interval = 0.0


def _shorten() -> None:
    global _beside_count, _saved_interval, _applied_interval
    with _beside_lock:
        if _beside_count == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, BESIDE_SWITCH_INTERVAL_S))
            _applied_interval = sys.getswitchinterval()  # as the interpreter rounds it
        _beside_count += 1


def _restore() -> None:
    global _beside_count
    with _beside_lock:
        _beside_count -= 1
        # put back, unless the user's own code set an interval of its own meanwhile
        if _beside_count == 0 and sys.getswitchinterval() == _applied_interval:
            sys.setswitchinterval(_saved_interval)


@contextlib.contextmanager
def quick_handoffs() -> Iterator[None]:
    """A shorter thread switch interval while an answer runs beside a cell.

    A CPU-bound cell holds the GIL and gives it up only every switch interval (5 ms by default);
    the answer passes work between several threads (the subshell's, the agent's loop, the
    kernel's I/O), each hand-over waiting that long. A shorter interval for the answer's length
    lets it through (benchmark figure 22); the interval is put back when the last one ends.
    """
    _shorten()
    try:
        yield
    finally:
        _restore()


class QuickHandoffsDuringCells:
    """The short switch interval for the whole of every main-shell cell, in a kernel.

    An answer beside a pure-Python loop is mostly waiting for that loop to give up the GIL: each
    hop between the kernel's threads waits one switch interval. Profiled (figure 22 (a)), about
    ten of those hops come before the ``%%agent`` magic even starts — the shell channel thread
    handing the request to the subshell, ipykernel publishing its status and input and flushing
    its streams through the IOPub thread, each flush a round trip — and at the default 5 ms they
    took 50–90 ms of a 100–160 ms first token (13–40 ms on an idle kernel). ``quick_handoffs``
    starts too late for them, so the interval is short from the main cell's start
    (``pre_run_cell`` on the main thread) to its end (``post_run_cell``). A lone loop pays
    nothing for it: the interval only matters when another thread asks for the GIL.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._active = False
        self._installed = False

    def install(self) -> None:
        if getattr(self.shell, "kernel", None) is None:  # terminal IPython: no subshells
            return
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            for name, hook in (
                ("pre_run_cell", self.pre_run_cell),
                ("post_run_cell", self.post_run_cell),
            ):
                with contextlib.suppress(ValueError):
                    self.shell.events.unregister(name, hook)
            self._installed = False
        self.post_run_cell(None)

    def pre_run_cell(self, _info: Any) -> None:
        if threading.current_thread() is threading.main_thread() and not self._active:
            self._active = True
            _shorten()

    def post_run_cell(self, _result: Any) -> None:
        if threading.current_thread() is threading.main_thread() and self._active:
            self._active = False
            _restore()
