"""Keep widgets responsive while a ``%%agent`` cell is still running.

A button in a cell's output (Approve / Deny, "show more", a tool toggle) sends a comm message to
the kernel. The kernel normally handles it on its main event loop, which is blocked for as long
as the cell runs — so a cell that waits for a click would wait forever.

ipykernel 7 receives shell messages on a separate thread and forwards them to the main thread
through an in-process socket. ``KernelCommPoller.poll()``, called from the main thread while the
cell waits, reads that socket directly: comm messages are dispatched at once (in a copied context,
so the running cell keeps its output parent); anything else (the next cell's ``execute_request``
when the user pressed "run all") is kept and handed back to the kernel, in order, when the
poller is closed. A comm message ipykernel had already read from the socket when the cell started
(it reads one message per pass of its event loop and queues each as a task: the one read right
after this cell's ``execute_request`` waits behind the cell) is taken from that queue when the
poller opens and handled too (``_queued_shell_messages``). ``wait`` sleeps on that socket and a
wake-up descriptor together: the agent's main-thread pump sleeps there, so a click wakes it at
once. Kernels without that thread (ipykernel 6) get the same effect through ``jupyter_ui_poll``.
Where neither works, ``available`` is ``False`` and callers fall back to a text prompt.

While a poller is open the kernel stays "busy" for the frontend (``_StayBusy``): JupyterLab 4 sends
widget messages to a kernel subshell, which handles them on its own thread at once and publishes
"busy" then "idle" for each — and the frontend's status bar shows the last status it got, so it
said Idle while the cell still ran. After such an "idle" the kernel now says "busy" again, with the
running ``execute_request`` as parent (the status a frontend ties to that cell is unchanged: its
own "idle" still comes when the cell ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import select
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_COMM_MESSAGES = frozenset({"comm_open", "comm_msg", "comm_close"})
#: The poller a running cell holds, by kernel: others that wait for comm messages on the main
#: thread (the notebook co-author's replies) poll through it, never beside it.
_ACTIVE: dict[int, KernelCommPoller] = {}


#: Offered a comm message (header and content) before the kernel dispatches it; ``True``
#: takes it (``KernelCommPoller.poll``).
Claim = Callable[[dict[str, Any]], bool]


def _bytes(frame: Any) -> bytes:
    return bytes(frame.bytes) if hasattr(frame, "bytes") else bytes(frame)


def _queued_shell_messages(kernel: Any) -> list[tuple[asyncio.Task[Any], list[Any]]]:
    """The shell messages ipykernel 7 read from the main thread's socket but has not started
    handling — each a task not yet run, wrapping ``kernel.shell_main(None, frames)`` — with
    their frames, in the order they were read.

    The running cell blocks the event loop, so those tasks run only when it ends; a widget poller
    reading the socket never sees their messages."""
    try:
        from ipykernel.utils import _async_in_context

        loop = asyncio.get_running_loop()
        shell_main = kernel.shell_main
    except (ImportError, RuntimeError, AttributeError):
        return []

    async def probe() -> None:
        pass

    wrapper = _async_in_context(probe).__code__  # how ipykernel wraps each message's handler
    queued: list[tuple[int, asyncio.Task[Any], list[Any]]] = []
    for task in asyncio.all_tasks(loop):
        coroutine: Any = task.get_coro()
        if getattr(coroutine, "cr_code", None) is not wrapper:
            continue
        if inspect.getcoroutinestate(coroutine) != inspect.CORO_CREATED:
            continue
        local = coroutine.cr_frame.f_locals
        handler, args = local.get("f"), local.get("args")
        if not (
            isinstance(handler, functools.partial)
            and handler.func == shell_main
            and handler.args == (None,)  # the main shell's, not a subshell's
            and isinstance(args, tuple)
            and len(args) == 1
            and isinstance(args[0], list)
        ):
            continue
        number = task.get_name().rpartition("-")[2]  # "Task-N": N counts up as tasks are made
        queued.append((int(number) if number.isdigit() else 0, task, args[0]))
    queued.sort(key=lambda found: found[0])
    return [(task, frames) for _, task, frames in queued]


def _drop_queued(task: asyncio.Task[Any]) -> bool:
    """Cancel ``task`` before it starts, quietly: pyzmq logs an error for a message handler that
    did not finish, so its done callback goes first. ``False`` (the task is left as it is) when
    those callbacks cannot be seen."""
    callbacks = getattr(task, "_callbacks", None)
    if not isinstance(callbacks, list):
        return False
    for callback, _context in list(callbacks):
        task.remove_done_callback(callback)
    return task.cancel()


def active_poller(kernel: Any) -> KernelCommPoller | None:
    """The poller the running ``%%agent`` cell holds for ``kernel``, if any."""
    return _ACTIVE.get(id(kernel))


def unattended_kernel(shell: Any) -> bool:
    """Whether ``shell`` runs in a kernel whose client can't answer the running cell.

    Jupyter frontends send ``allow_stdin=True`` with each ``execute_request``; nbclient (and so
    nbconvert ``--execute``, papermill, nbval) does not. A kernel that does not say counts as
    unattended; outside a kernel: ``False``.
    """
    kernel = getattr(shell, "kernel", None)
    return kernel is not None and not bool(getattr(kernel, "_allow_stdin", False))


class _StayBusy:
    """Follow every "idle" the kernel publishes for another message with a "busy" for the
    running cell's ``execute_request``, until ``remove``."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self._original: Any = None
        try:
            parent = kernel.get_parent("shell")
            original = kernel._publish_status
        except AttributeError:
            return
        header = (parent or {}).get("header") or {}
        if header.get("msg_type") != "execute_request":
            return
        if getattr(original, "_jupyter_agent_stay_busy", False):
            return  # an outer poller of the same cell keeps it busy already
        running = header.get("msg_id")

        def publish_status(status: str, channel: str, parent: Any = None) -> None:
            original(status, channel, parent)
            if status != "idle":
                return
            with contextlib.suppress(Exception):
                about = parent or kernel.get_parent(channel)
                if ((about or {}).get("header") or {}).get("msg_id") != running:
                    original("busy", "shell", kernel_parent)

        kernel_parent = parent
        publish_status._jupyter_agent_stay_busy = True  # type: ignore[attr-defined]
        kernel._publish_status = publish_status
        self._original = original

    def remove(self) -> None:
        original, self._original = self._original, None
        if original is None:
            return
        kernel: Any = self._kernel
        current = vars(kernel).get("_publish_status")
        if getattr(current, "_jupyter_agent_stay_busy", False):
            # The bound method is the class's: dropping the instance attribute restores it.
            if getattr(original, "__self__", None) is kernel:
                delattr(kernel, "_publish_status")
            else:
                kernel._publish_status = original


class KernelCommPoller:
    """Dispatch widget messages from the main thread while a cell blocks it."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self._socket: Any = None
        self._deferred: list[Any] = []
        self._ui_poll: Any = None
        self._ui_poll_context: Any = None
        self._zmq_poller: Any = None
        self._zmq_poller_fd = -1
        self.available = False
        try:
            manager = kernel.shell_channel_thread.manager
            self._socket = manager._shell_channel_to_main.to_socket
            self.available = callable(getattr(kernel, "dispatch_shell", None))
        except AttributeError:
            self._socket = None
        if not self.available:
            self._start_ui_poll()
        if self.available:
            _ACTIVE[id(kernel)] = self
        self._stay_busy = _StayBusy(kernel)
        if self._socket is not None and self.available:
            self._take_queued()

    @classmethod
    def for_shell(cls, shell: Any) -> KernelCommPoller | None:
        """A poller for ``shell``'s kernel, or ``None`` outside a kernel."""
        kernel = getattr(shell, "kernel", None)
        if kernel is None:
            return None
        return cls(kernel)

    def _start_ui_poll(self) -> None:
        try:
            from jupyter_ui_poll import ui_events

            self._ui_poll_context = ui_events()
            self._ui_poll = self._ui_poll_context.__enter__()
            self.available = True
        except Exception:  # not an ipykernel we understand: no live widgets during the cell
            self._ui_poll_context = None
            self._ui_poll = None

    def poll(self, timeout_s: float = 0.0, claim: Claim | None = None) -> int:
        """Handle the widget messages that arrived; wait up to ``timeout_s`` for the first.

        ``claim`` is offered each comm message first (signature checked, content decoded); when
        it returns ``True`` the message is its, and the kernel's dispatch does not see it: how
        the notebook co-author takes the answers it waits for without the shell's
        ``pre_execute``/``post_execute`` events that comm handling fires (~0.8 ms a message)."""
        if self._socket is not None:
            try:
                return self._poll_socket(timeout_s, claim)
            except Exception as exc:  # the kernel is shutting down: its sockets are closing
                return self._lost(exc)
        if self._ui_poll is not None:
            self._ui_poll(10)
        return 0

    def pump_until(self, done: Callable[[], bool]) -> None:
        """Handle widget messages until ``done()`` (a prompt answered, Stop pressed): how a
        prompt waits on the main thread for its click."""
        while not done():
            if self.poll(0.05) == 0:
                time.sleep(0.01)

    def wait(self, timeout_s: float, wake_fd: int) -> int:
        """Sleep until a widget message arrives (it is handled), ``wake_fd`` is readable or
        ``timeout_s`` passes: how the agent's pump sleeps, so a click is answered at once."""
        if self._socket is None:
            select.select([wake_fd], [], [], timeout_s)
            return self.poll(0)
        import zmq

        if self._zmq_poller is None or self._zmq_poller_fd != wake_fd:
            self._zmq_poller = zmq.Poller()
            self._zmq_poller.register(self._socket, zmq.POLLIN)
            self._zmq_poller.register(wake_fd, zmq.POLLIN)
            self._zmq_poller_fd = wake_fd
        try:
            ready = dict(self._zmq_poller.poll(int(timeout_s * 1000)))
            return self._poll_socket(0) if self._socket in ready else 0
        except Exception as exc:  # the kernel is shutting down (a restart): nothing more comes
            return self._lost(exc)

    def _lost(self, exc: BaseException) -> int:
        """The shell socket failed under us (a kernel restart closes it, ``ZMQError``): no more
        widget messages this cell; no traceback in the cell for it."""
        import zmq

        if not isinstance(exc, zmq.ZMQError):
            raise exc
        log.debug("jupyter-agent: the shell socket closed during the cell (%s)", exc)
        self._socket = None
        self._zmq_poller = None
        return 0

    def _poll_socket(self, timeout_s: float, claim: Claim | None = None) -> int:
        handled = 0
        wait_ms = int(timeout_s * 1000)
        while self._socket.poll(wait_ms):
            wait_ms = 0
            frames = self._socket.recv_multipart(copy=False)
            message = self._peek(frames)
            kind = str(message["header"].get("msg_type", "")) if message is not None else ""
            if kind not in _COMM_MESSAGES:
                self._deferred.append(frames)
                continue
            handled += 1
            if claim is None or not self._claimed(message, claim):
                self._dispatch(frames)
        return handled

    def _take_queued(self) -> None:
        """Handle the comm messages ipykernel read before this cell ran and queued behind it
        (a click made while an earlier cell ran, read right after this cell's request): they
        would otherwise wait for the whole cell. Anything else stays in the kernel's queue."""
        for task, frames in _queued_shell_messages(self._kernel):
            message = self._peek(frames)
            kind = str(message["header"].get("msg_type", "")) if message is not None else ""
            if kind in _COMM_MESSAGES and _drop_queued(task):
                self._dispatch(frames)

    def _peek(self, frames: list[Any]) -> dict[str, Any] | None:
        """The message's header, its signature checked but not yet recorded as seen (the
        kernel's dispatch records it), or ``None`` if it is not a valid message."""
        try:
            session = self._kernel.session
            _, parts = session.feed_identities(frames, copy=False)
            message: dict[str, Any] = session.deserialize(parts, content=False, copy=False)
            message["_parts"] = parts
            return message
        except Exception:
            return None

    def _claimed(self, message: dict[str, Any] | None, claim: Claim) -> bool:
        if message is None:
            return False
        session = self._kernel.session
        parts = message.pop("_parts")
        try:
            content = session.unpack(_bytes(parts[4]))
        except Exception:
            return False
        if not isinstance(content, dict) or not claim({**message, "content": content}):
            return False
        if session.auth is not None:  # seen: a replay of it is refused, as dispatch refuses
            with contextlib.suppress(Exception):
                session._add_digest(_bytes(parts[0]))
        return True

    def _dispatch(self, frames: list[Any]) -> None:
        kernel = self._kernel
        saved_context = getattr(kernel, "_shell_context", None)

        def drive() -> None:
            coroutine = kernel.dispatch_shell(frames, subshell_id=None, concurrent=True)
            try:
                coroutine.send(None)
            except StopIteration:
                return
            coroutine.close()  # it wanted the event loop: give up on this one message
            log.warning("jupyter-agent: a widget message could not be handled during the cell")

        try:
            contextvars.copy_context().run(drive)
        except Exception:
            log.exception("jupyter-agent: handling a widget message failed")
        finally:
            if saved_context is not None:
                kernel._shell_context = saved_context

    def close(self) -> None:
        """Hand the messages that are not ours back to the kernel, in the order they came."""
        if _ACTIVE.get(id(self._kernel)) is self:
            del _ACTIVE[id(self._kernel)]
        self._stay_busy.remove()
        if self._ui_poll_context is not None:
            with contextlib.suppress(Exception):
                self._ui_poll_context.__exit__(None, None, None)
            self._ui_poll_context = None
            self._ui_poll = None
        deferred, self._deferred = self._deferred, []
        if not deferred and self._socket is None:
            return
        loop = self._kernel.io_loop
        for frames in deferred:
            loop.add_callback(self._kernel.shell_main, None, frames)
        stream = getattr(
            getattr(self._kernel.shell_channel_thread.manager, "_shell_channel_to_main", None),
            "to_stream",
            None,
        )
        if stream is not None:
            # We read from the stream's socket behind its back; let it look for more messages.
            loop.add_callback(lambda: stream._handle_events(stream.socket, 0))
