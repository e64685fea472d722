"""Running a notebook cell for ``run_cell``: its code on the main thread, its outputs as they come.

``run_cell`` runs the cell's code on the main thread now (the one executor, ``runtime/executor``),
captures its outputs as nbformat outputs (streams, rich displays, matplotlib figures, errors),
places them in the cell over the link with an execution count and returns them to the model,
images as images. It obeys ``tool_timeout`` (a watchdog interrupts the code) and Stop (the
frontend interrupts the kernel when the agent's Stop button is pressed during a run). Kept apart
from the link: it is the one part of co-authoring that runs user code and swaps ``sys.stdout``.

A long cell (issue 37): while it runs, a ticker thread tells the calling turn how long it has run
and its last output line, once every ``PROGRESS_REPORT_S`` (the tool call's progress, which the
turn's view shows and a served call passes on); the model may give a call a shorter ``timeout``
than the user's ``tool_timeout``, never a longer one; and the main shell runs one such cell at a
time — a second ``run_cell`` while one runs is refused at once, saying which cell runs
(``claim_main_shell``), rather than waiting behind it for minutes.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import FrontendError
from ...tools.base import IMAGE_MEDIA_TYPES, Image
from ...tools.progress import ProgressCallback
from ..runtime.executor import parse_cell, run_cell_code
from ..runtime.figures import MAX_RUN_IMAGES, new_figures, open_figures
from ..text import clip
from .comm_protocol import RunEndOp, RunStartOp
from .link import NotebookLink

#: Seconds between progress updates of a running cell's outputs.
PROGRESS_INTERVAL_S = 0.25
#: Characters of a cell run's outputs returned to the model.
MAX_RUN_TEXT = 10_000
#: Seconds between two progress reports of a running cell to the calling turn.
PROGRESS_REPORT_S = 1.0
#: Characters of the last output line a progress report carries.
PROGRESS_LINE_CHARS = 200

_claim_lock = threading.Lock()
#: The cell ``run_cell`` is running on the main shell now, and since when (monotonic).
_running: tuple[str, float] | None = None


@contextlib.contextmanager
def claim_main_shell(cell_id: str) -> Iterator[None]:
    """Hold the main shell for one ``run_cell`` of ``cell_id``; a second one while it is held
    fails at once with a ``FrontendError`` naming the running cell."""
    global _running
    with _claim_lock:
        if _running is not None:
            running, since = _running
            raise FrontendError(
                f"run_cell was not run: cell {running} is still running on the kernel's main "
                f"shell (for {time.monotonic() - since:.0f} s), which runs one cell at a time. "
                f"Wait for its result, then call run_cell for {cell_id} again."
            )
        _running = (cell_id, time.monotonic())
    try:
        yield
    finally:
        with _claim_lock:
            _running = None


def last_line(outputs: list[dict[str, Any]]) -> str:
    """The last line a running cell's outputs show, for its progress (``""``: none yet)."""
    for output in reversed(outputs):
        kind = output.get("output_type")
        if kind == "stream":
            lines = [line for line in str(output.get("text", "")).splitlines() if line.strip()]
            if lines:
                return lines[-1].strip()[:PROGRESS_LINE_CHARS]
        elif kind == "error":
            return f"{output.get('ename')}: {output.get('evalue')}"[:PROGRESS_LINE_CHARS]
        elif kind in ("display_data", "execute_result"):
            plain = (output.get("data") or {}).get("text/plain", "")
            plain = "".join(plain) if isinstance(plain, list) else str(plain)
            lines = [line for line in plain.splitlines() if line.strip()]
            return (lines[-1].strip() if lines else "[display]")[:PROGRESS_LINE_CHARS]
    return ""


class _Ticker:
    """Reports a running cell's elapsed seconds and last output line every
    ``PROGRESS_REPORT_S``, from a thread of its own (the main thread runs the cell). One thread
    for the process, started at the first run and waiting between runs: starting one per run
    would cost every short ``run_cell`` (benchmark figure 20) a thread start. ``run_python``'s
    code is watched the same way (``progress_while``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed = threading.Event()
        self._watched: tuple[Callable[[], str], ProgressCallback, float] | None = None
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, last: Callable[[], str], report: ProgressCallback | None) -> Iterator[None]:
        if report is None:
            yield
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._tick, name="jupyter-agent-cell-progress", daemon=True
                )
                self._thread.start()
            self._watched = (last, report, time.monotonic())
            self._armed.set()
        try:
            yield
        finally:
            with self._lock:  # a report under way ends first; none is made after
                self._watched = None
                self._armed.clear()

    def _tick(self) -> None:
        while True:
            self._armed.wait()
            time.sleep(PROGRESS_REPORT_S)
            with self._lock:
                if self._watched is None:
                    continue
                last, report, started = self._watched
                if time.monotonic() - started < PROGRESS_REPORT_S * 0.9:
                    continue  # a run that began during the sleep: its first report next time
                with contextlib.suppress(Exception):  # outputs changing under us: next time
                    line = last()
                    seconds = round(time.monotonic() - started)
                    message = f"{seconds} s elapsed" + (
                        f"; last output: {line}" if line else "; no output"
                    )
                    report(seconds, None, message)  # the message names the amount itself


_ticker = _Ticker()


def progress_while(
    outputs: Callable[[], list[dict[str, Any]]], report: ProgressCallback | None
) -> contextlib.AbstractContextManager[None]:
    """While the block runs code on the main thread, ``report`` (a tool call's progress
    callback; ``None``: nothing) hears every ``PROGRESS_REPORT_S`` how long it has run and the
    last line of ``outputs()`` (nbformat outputs so far): ``run_cell``'s cell, ``run_python``'s
    code."""
    return _ticker.watching(lambda: last_line(outputs()), report)


#: What the page says when a cell no longer holds the source the user approved.
CHANGED_SINCE_APPROVED = "changed since it was approved"


def run_changed(cell_id: str) -> str:
    return (
        f"cell {cell_id} was edited after the user approved running it, so nothing ran; call "
        "run_cell again to ask the user about its new source"
    )


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

    def run(
        self, source: str, count: int, timeout: float | None, timeout_name: str = "tool_timeout"
    ) -> bool:
        """Run ``source``; ``True`` unless it raised. A ``KeyboardInterrupt`` that is not the
        timeout's is raised again once the error output is recorded. ``timeout_name``: what the
        timeout's error calls the limit."""
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
                self._error(_Timeout(f"the cell ran longer than {timeout_name} ({timeout:g} s)"))
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


def run_cell_now(
    link: NotebookLink,
    cell_id: str,
    timeout: float | None,
    *,
    expect: str | None = None,
    report: ProgressCallback | None = None,
    timeout_name: str = "tool_timeout",
) -> tuple[bool, list[dict[str, Any]], int]:
    """On the main thread: run cell ``cell_id``, its outputs placed in it as they come.

    ``expect``: the source the user approved; the page refuses to start the run when the cell
    holds anything else, and the kernel runs ``expect`` itself, never what a reply says.
    ``report``: the calling tool call's progress callback (elapsed seconds, last output line)."""
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
        with progress_while(lambda: list(run.outputs), report):
            ok = run.run(source, count, timeout, timeout_name)
    finally:
        end: RunEndOp = {"op": "run_end", "cell_id": cell_id, "outputs": run.outputs}
        end["execution_count"] = count
        # Not waited for: the comm delivers in order, so whatever the agent asks next sees
        # the outputs placed (waiting cost a second round trip, benchmark figure 20).
        with contextlib.suppress(FrontendError):
            link.send(end, answer=False)
    return ok, run.outputs, count
