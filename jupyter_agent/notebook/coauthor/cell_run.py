"""Running a notebook cell for ``run_cell``: its code on the main thread, its outputs as they come.

``run_cell`` runs the cell's code on the main thread now (the one executor, ``runtime/executor``),
captures its outputs as nbformat outputs (streams, rich displays, matplotlib figures, errors),
places them in the cell over the link with an execution count and returns them to the model,
images as images. It obeys ``tool_timeout`` (a watchdog interrupts the code) and Stop (the
frontend interrupts the kernel when the agent's Stop button is pressed during a run). Kept apart
from the link: it is the one part of co-authoring that runs user code and swaps ``sys.stdout``.
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
from collections.abc import Callable
from typing import Any

from ...errors import FrontendError
from ...tools.base import IMAGE_MEDIA_TYPES, Image
from ..runtime.executor import parse_cell, run_cell_code
from ..runtime.figures import new_figures, open_figures
from ..text import clip
from .comm_protocol import RunEndOp, RunStartOp
from .link import NotebookLink

#: Seconds between progress updates of a running cell's outputs.
PROGRESS_INTERVAL_S = 0.25
#: Characters of a cell run's outputs returned to the model.
MAX_RUN_TEXT = 10_000
#: Images a cell run returns to the model at most.
MAX_RUN_IMAGES = 5


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
