"""The figures code produced while ``run_python`` ran it, as ``jupyter_agent.Image`` parts.

Two ways a plot shows up, both caught on the kernel's main thread:

* something displays it (``plt.show()`` with the inline backend, ``display(fig)``, any object
  with a PNG/JPEG repr): ipykernel's display-publisher hook sees the ``display_data`` message and
  keeps the image as displayed (the message still goes to the notebook);
* a matplotlib figure is created and left open: at the end it is rendered to PNG (``savefig``)
  and left open, so the notebook's inline backend still shows it under the cell.

At most ``MAX_RUN_IMAGES`` images are kept.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import sys
from types import TracebackType
from typing import Any

from ...tools.base import IMAGE_MEDIA_TYPES, Image

#: Images one run of code returns to the model at most (``run_python``; ``run_cell`` too).
MAX_RUN_IMAGES = 5


class FigureCapture:
    """``with FigureCapture(shell) as capture: ...``, then ``capture.images``."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.images: list[Image] = []
        self._figures_before: set[int] = set()
        self._publisher: Any = None

    def __enter__(self) -> FigureCapture:
        self._figures_before = set(open_figures())
        publisher: Any = getattr(self.shell, "display_pub", None)
        if getattr(publisher, "register_hook", None) is not None:
            publisher.register_hook(self._hook)
            self._publisher = publisher
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._publisher is not None:
            self._publisher.unregister_hook(self._hook)
            self._publisher = None
        if exc_type is not None and not issubclass(exc_type, Exception):
            return  # interrupted: no rendering now
        for figure in new_figures(self._figures_before):
            if len(self.images) >= MAX_RUN_IMAGES:
                break
            out = io.BytesIO()
            try:
                figure.savefig(out, format="png", dpi=100, bbox_inches="tight")
            except Exception:  # a figure that cannot draw: its error is the user's to see
                continue
            self.images.append(Image(out.getvalue(), "image/png"))

    def _hook(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("msg_type") != "display_data" or len(self.images) >= MAX_RUN_IMAGES:
            return message
        data = (message.get("content") or {}).get("data") or {}
        for media_type in IMAGE_MEDIA_TYPES:
            encoded = data.get(media_type)
            if isinstance(encoded, str):
                with contextlib.suppress(binascii.Error, ValueError):
                    self.images.append(Image(base64.b64decode(encoded), media_type))
                break
        return message


def open_figures() -> dict[int, Any]:
    """matplotlib's open figures by number, when the user's code has imported pyplot."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return {}
    try:
        return {number: pyplot.figure(number) for number in pyplot.get_fignums()}
    except Exception:
        return {}


def new_figures(before: set[int]) -> list[Any]:
    """The open figures whose numbers are not in ``before`` (``set(open_figures())`` taken when
    the code started): what the code left open. Both ``run_python`` and ``run_cell`` show these."""
    return [figure for number, figure in open_figures().items() if number not in before]
