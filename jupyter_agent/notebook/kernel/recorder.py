"""``CellRecorder``: what the session's cells ran and showed, for the agent to look at.

From ``%load_ext jupyter_agent`` on, every executed cell is recorded — its execution count, its
source and its outputs as the notebook showed them: printed text, rich results (their
``text/plain`` and their images, kept as the base64 the kernel displayed, never re-encoded here),
and errors with their traceback. ``notebook_history`` reads them.

How it listens, all on the kernel's main thread and without copying anything:

* IPython's ``pre_run_cell`` / ``post_run_cell`` events open and close a cell's record; the cell
  that is running (the ``%%agent`` cell asking) is not in the buffer until it has finished; a
  body a cell magic runs as a cell of its own (``%%capture``, without history) stays part of
  the cell that holds it;
* ipykernel's message hooks on the display publisher and the display hook
  (``register_hook``) see each ``display_data``, ``update_display_data`` and ``execute_result``
  bundle as it is sent; widget views are skipped (their ``text/plain`` is kept);
* ``sys.stdout.write`` / ``sys.stderr.write`` of the kernel's streams are wrapped to see the
  printed text (ipykernel's stream hooks run on its I/O thread, too late and out of order) —
  for the length of each cell: wrapped at ``pre_run_cell``, put back at ``post_run_cell``.
  IPython 9 tees the streams around every cell in the same way and restores the method it found
  when the cell ends, which undid a wrapper installed once (during the ``%load_ext`` cell); a
  wrapper per cell survives that, and only the current one records, so nothing is recorded
  twice and nothing piles up.

A cell a kernel subshell runs beside the main shell (ipykernel 7: ``runtime/subshell.py``) fires
the same shell events and writes to the same streams from its own thread; the recorder leaves it
out, so the running cell's record is neither closed nor filled by it, and ``running()`` hands that
cell, its output so far, to the answer beside it.

Terminal IPython has no message hooks: there the recorder keeps sources, printed text (which
includes the ``Out[n]:`` lines the terminal prints) and errors.

Memory is capped (``MAX_TOTAL_CHARS``, ``MAX_CELL_CHARS``): a cell stops growing at its cap
(marked truncated) and the oldest cells are dropped when the total goes over.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...tools.base import IMAGE_MEDIA_TYPES
from ..runtime.services import register, service, unregister
from ..runtime.subshell import on_subshell_thread

#: The whole buffer holds at most this many characters (text and base64 images): about 20 MB.
MAX_TOTAL_CHARS = 20_000_000
#: One cell's record holds at most this many characters (about 2 MB); the rest is dropped.
MAX_CELL_CHARS = 2_000_000
#: Characters of a traceback kept (its end, where the error is).
MAX_TRACEBACK_CHARS = 8_000

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def starting_cell_count(shell: Any, store_history: bool) -> int | None:
    """The execution count of the cell whose ``pre_run_cell`` is firing. IPython 9.8 counts a
    cell before the event (``execution_count += 1``), earlier versions after the cell ran; a
    cell that stores no history is not counted. (IPython is read from ``sys.modules``: a shell
    that fires events has imported it, and this module must import without it.)"""
    count = getattr(shell, "execution_count", None)
    if not isinstance(count, int):
        return None
    version = getattr(sys.modules.get("IPython"), "version_info", (0, 0))
    return count - 1 if store_history and tuple(version[:2]) >= (9, 8) else count


@dataclass
class RecordedOutput:
    """One output of a cell: ``kind`` is ``stream``, ``display``, ``result`` or ``error``."""

    kind: str
    text: str = ""
    #: ``(media_type, base64 data)`` of the images shown, as displayed.
    images: list[tuple[str, str]] = field(default_factory=list)
    display_id: str | None = None
    #: For streams: the pieces written, joined on read.
    chunks: list[str] = field(default_factory=list)
    name: str = ""

    def full_text(self) -> str:
        return "".join(self.chunks) if self.chunks else self.text

    @property
    def size(self) -> int:
        return (
            len(self.text) + sum(len(c) for c in self.chunks) + sum(len(d) for _, d in self.images)
        )


@dataclass
class RecordedCell:
    execution_count: int | None
    source: str
    outputs: list[RecordedOutput] = field(default_factory=list)
    size: int = 0
    truncated: bool = False


class CellRecorder:
    """A bounded record of the session's executed cells (see the module docstring)."""

    def __init__(
        self,
        shell: Any,
        *,
        max_total_chars: int = MAX_TOTAL_CHARS,
        max_cell_chars: int = MAX_CELL_CHARS,
    ) -> None:
        self.shell = shell
        self.max_total_chars = max_total_chars
        self.max_cell_chars = max_cell_chars
        self._cells: deque[RecordedCell] = deque()
        self._total = 0
        self._current: RecordedCell | None = None
        self._lock = threading.Lock()
        self._installed: list[Callable[[], None]] = []
        #: Per stream name: the stream, the cell's wrapper of its ``write``, and what the
        #: stream's own ``write`` attribute was before (``None``: the class's method).
        self._writers: dict[str, tuple[Any, Callable[[str], Any], Any]] = {}
        #: Cells run inside the current one (a cell magic's body), not yet finished.
        self._nested = 0

    # -- installing --------------------------------------------------------------------------

    def install(self) -> None:
        """Start listening to ``shell`` (idempotent per recorder)."""
        if self._installed:
            return
        events = self.shell.events
        events.register("pre_run_cell", self._pre_run_cell)
        events.register("post_run_cell", self._post_run_cell)
        self._installed.append(lambda: events.unregister("pre_run_cell", self._pre_run_cell))
        self._installed.append(lambda: events.unregister("post_run_cell", self._post_run_cell))
        for attribute in ("display_pub", "displayhook"):
            hooked: Any = getattr(self.shell, attribute, None)
            if getattr(hooked, "register_hook", None) is None:
                continue
            hooked.register_hook(self._message_hook)
            self._installed.append(self._unhooker(hooked))
        self._installed.append(self._unwrap_streams)
        register(self.shell, self)

    def _unhooker(self, hooked: Any) -> Callable[[], None]:
        def unhook() -> None:
            hooked.unregister_hook(self._message_hook)

        return unhook

    def uninstall(self) -> None:
        for undo in reversed(self._installed):
            with contextlib.suppress(Exception):  # already gone (a shell being torn down)
                undo()
        self._installed = []
        unregister(self.shell, self)

    def _wrap_streams(self) -> None:
        """Wrap ``write`` of ``sys.stdout``/``sys.stderr`` for the cell that starts."""
        self._unwrap_streams()  # a cell that never reached post_run_cell
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            before = getattr(stream, "__dict__", {}).get("write")
            write = self._writer(name, stream.write)
            try:
                stream.write = write
            except (AttributeError, TypeError):  # a built-in stream (terminal): no printed text
                continue
            with self._lock:
                self._writers[name] = (stream, write, before)

    def _writer(self, name: str, original: Callable[[str], Any]) -> Callable[[str], Any]:
        """A ``write`` that records ``text`` (while it is the stream's current wrapper)."""

        def write(text: str) -> Any:
            if (
                self._current is not None
                and isinstance(text, str)
                and text
                and not on_subshell_thread()
            ):
                current = self._writers.get(name)
                if current is not None and current[1] is write:
                    self._add_stream(name, text)
            return original(text)

        return write

    def _unwrap_streams(self) -> None:
        """Put back what each wrapped stream had, where the wrapper is still on top."""
        with self._lock:
            writers, self._writers = self._writers, {}
        for stream, write, before in writers.values():
            if getattr(stream, "__dict__", {}).get("write") is not write:
                continue  # wrapped again on top of ours: ours passes through, records nothing
            if before is None:
                del stream.write
            else:
                stream.write = before

    # -- events (main thread) ----------------------------------------------------------------

    def _pre_run_cell(self, info: Any) -> None:
        if on_subshell_thread():
            return  # a cell answered beside the running one (``subshell.py``): not its record
        if self._current is not None and not getattr(info, "store_history", True):
            # A cell magic running its body as a cell of its own (``%%capture``): still the
            # same notebook cell, with its count and its whole source; what the body shows is
            # the cell's output (or captured, and then not shown, like the notebook).
            self._nested += 1
            return
        self._nested = 0
        source = getattr(info, "raw_cell", "") or ""
        count = starting_cell_count(self.shell, getattr(info, "store_history", True))
        self._current = RecordedCell(count, source, size=len(source))
        self._wrap_streams()

    def _post_run_cell(self, result: Any) -> None:
        if on_subshell_thread():
            return
        if self._nested:
            self._nested -= 1
            return
        self._unwrap_streams()
        cell = self._current
        self._current = None
        if cell is None:
            return
        count = getattr(result, "execution_count", None)
        if count is not None:
            cell.execution_count = count
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is not None:
            self._add(cell, RecordedOutput("error", text=format_error(error)))
        with self._lock:
            self._cells.append(cell)
            self._total += cell.size
            while self._total > self.max_total_chars and len(self._cells) > 1:
                self._total -= self._cells.popleft().size

    def _message_hook(self, message: dict[str, Any]) -> dict[str, Any]:
        cell = self._current
        if cell is None or on_subshell_thread():
            return message
        kind = message.get("msg_type") or message.get("header", {}).get("msg_type")
        if kind in ("display_data", "update_display_data", "execute_result"):
            with contextlib.suppress(Exception):  # never break the kernel's output over a record
                self._add_bundle(cell, kind, message.get("content", {}))
        return message

    def _add_bundle(self, cell: RecordedCell, kind: str, content: dict[str, Any]) -> None:
        data = content.get("data") or {}
        display_id = (content.get("transient") or {}).get("display_id")
        text = data.get("text/plain", "")
        if not isinstance(text, str):
            text = "".join(text)
        if _WIDGET_VIEW in data and not text:
            return
        images = []
        for media_type in IMAGE_MEDIA_TYPES:
            encoded = data.get(media_type)
            if isinstance(encoded, str):
                images.append((media_type, encoded))
                break
        if not images and "text/markdown" in data and not text:
            text = str(data["text/markdown"])
        output = RecordedOutput(
            "result" if kind == "execute_result" else "display",
            text=text,
            images=images,
            display_id=display_id,
        )
        if kind == "update_display_data":
            for index, existing in enumerate(cell.outputs):
                if display_id is not None and existing.display_id == display_id:
                    cell.size += output.size - existing.size
                    cell.outputs[index] = output
                    return
            return
        self._add(cell, output)

    def _add_stream(self, name: str, text: str) -> None:
        cell = self._current
        if cell is None:
            return
        last = cell.outputs[-1] if cell.outputs else None
        room = self.max_cell_chars - cell.size
        if room <= 0:
            cell.truncated = True
            return
        if len(text) > room:
            text = text[:room]
            cell.truncated = True
        if last is not None and last.kind == "stream" and last.name == name:
            last.chunks.append(text)
        else:
            cell.outputs.append(RecordedOutput("stream", name=name, chunks=[text]))
        cell.size += len(text)

    def _add(self, cell: RecordedCell, output: RecordedOutput) -> None:
        size = output.size
        if cell.size + size > self.max_cell_chars:
            cell.truncated = True
            if output.images or cell.size + 200 > self.max_cell_chars:
                return
            output.text = output.text[: self.max_cell_chars - cell.size]
            size = output.size
        cell.outputs.append(output)
        cell.size += size

    # -- reading (any thread) ----------------------------------------------------------------

    def cells(
        self, *, last: int | None = None, counts: Iterable[int] | None = None
    ) -> list[RecordedCell]:
        """Finished cells, oldest first: the ``last`` ones, or those with these ``counts``."""
        with self._lock:
            cells = list(self._cells)
        if counts is not None:
            wanted = set(counts)
            return [c for c in cells if c.execution_count in wanted]
        if last is not None:
            return cells[-last:] if last > 0 else []
        return cells

    def running(self) -> RecordedCell | None:
        """A copy of the cell the main shell runs now, its output so far (``None``: none runs;
        read by a cell answered beside it on a subshell)."""
        with self._lock:
            cell = self._current
            if cell is None:
                return None
            outputs = [
                RecordedOutput(o.kind, o.text, list(o.images), o.display_id, list(o.chunks), o.name)
                for o in list(cell.outputs)
            ]
        return RecordedCell(cell.execution_count, cell.source, outputs, cell.size, cell.truncated)

    def last_error(self) -> RecordedCell | None:
        """The most recent finished cell that ended in an error."""
        with self._lock:
            cells = list(self._cells)
        for cell in reversed(cells):
            if any(o.kind == "error" for o in cell.outputs):
                return cell
        return None


def format_error(error: BaseException) -> str:
    """The traceback of ``error`` without IPython's own frames, its end kept within the cap."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if "/IPython/" not in frame.filename.replace("\\", "/")
    ]
    text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(error), error))
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "…" + text[-MAX_TRACEBACK_CHARS:]
    return text.rstrip("\n")


def recorder_for(shell: Any) -> CellRecorder | None:
    """The recorder installed on ``shell``, if any."""
    return service(shell, CellRecorder)
