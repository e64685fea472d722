"""A stand-in for the browser's end of the widget comms, for tests that check what a user sees.

``Frontend.create_comm`` replaces ``comm.create_comm``: every widget model the kernel opens is
kept with its opening state and the messages sent on it since, so a test reads a widget as the
frontend has it (``state``, ``text``: what is shown) and sends it what a click sends (``toggle``,
``click``) through the handler the widget registered — never through the widget's private fields.
"""

from __future__ import annotations

import html
import re
from typing import Any

import ipywidgets as widgets


def html_text(markup: str) -> str:
    """What a reader sees of some HTML: the tags gone, the entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup)).strip()


class _FrontendComm:
    """One widget model's comm, as the frontend's end of it: the state it opened with and each
    message sent on it since."""

    def __init__(self, frontend: Frontend, data: dict[str, Any]) -> None:
        self.frontend = frontend
        self.comm_id = f"model-{len(frontend.models)}"
        self.kernel = "Truthy"  # ipywidgets sends only on a comm with a kernel
        self.opened_state: dict[str, Any] = dict(data["state"])
        self.messages: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.handlers: list[Any] = []
        self.closed = False
        frontend.models[self.comm_id] = self

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, handler: Any) -> None:
        self.handlers.append(handler)

    def send(self, *args: Any, **kwargs: Any) -> None:
        self.messages.append((args, kwargs))

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True


class Frontend:
    """What a browser holds of the kernel's widgets: every model opened over a comm, its state as
    the ``update`` messages left it, and a way to send it what a user's click sends."""

    def __init__(self) -> None:
        self.models: dict[str, _FrontendComm] = {}

    def create_comm(self, **kwargs: Any) -> _FrontendComm:
        return _FrontendComm(self, kwargs["data"])

    def state(self, widget: widgets.Widget | str) -> dict[str, Any]:
        """A model's state as the frontend has it (the opening state plus every update)."""
        model = self.models[widget if isinstance(widget, str) else widget.model_id]
        state = dict(model.opened_state)
        for args, kwargs in model.messages:
            data = args[0] if args else kwargs["data"]
            if data.get("method") == "update":
                state.update(data["state"])
        return state

    def children(self, widget: widgets.Widget | str) -> list[str]:
        return [ref.removeprefix("IPY_MODEL_") for ref in self.state(widget).get("children", [])]

    def shown(self, widget: widgets.Widget | str) -> bool:
        layout = self.state(widget).get("layout")
        return not layout or self.state(layout.removeprefix("IPY_MODEL_")).get("display") != "none"

    def visible(self, widget: widgets.Widget | str) -> list[dict[str, Any]]:
        """The states of the models a user sees under ``widget`` (its own first), in page
        order: children of a hidden box are not seen."""
        if not self.shown(widget):
            return []
        found = [self.state(widget)]
        for child in self.children(widget):
            found.extend(self.visible(child))
        return found

    def text(self, widget: widgets.Widget | str) -> str:
        """What a reader sees of ``widget``: button captions and HTML text, one line each."""
        lines = []
        for state in self.visible(widget):
            if state.get("_model_name") == "HTMLModel":
                lines.append(html_text(state["value"]))
            elif state.get("description"):
                lines.append(state["description"])
        return "\n".join(lines)

    def opened(self) -> int:
        return len(self.models)

    def send(self, widget: widgets.Widget | str, data: dict[str, Any]) -> None:
        model = self.models[widget if isinstance(widget, str) else widget.model_id]
        for handler in model.handlers:
            handler({"content": {"data": data}, "buffers": []})

    def toggle(self, widget: widgets.Widget | str, value: bool) -> None:
        """What the browser sends when the user presses a toggle button."""
        self.send(widget, {"method": "update", "state": {"value": value}, "buffer_paths": []})

    def click(self, widget: widgets.Widget | str) -> None:
        self.send(widget, {"method": "custom", "content": {"event": "click"}})

    def find(self, widget: widgets.Widget | str, model_name: str) -> list[str]:
        """The ids of the models named ``model_name`` below ``widget`` (shown or not)."""
        found = []
        for child in self.children(widget):
            if self.state(child).get("_model_name") == model_name:
                found.append(child)
            found.extend(self.find(child, model_name))
        return found


# What the browser sends, for tests that hold a widget rather than a Frontend.


def frontend_update(widget: widgets.Widget, **state: Any) -> None:
    """What the browser sends when the user changes a control."""
    widget._handle_msg(
        {
            "content": {"data": {"method": "update", "state": state, "buffer_paths": []}},
            "buffers": [],
        }
    )


def frontend_click(button: widgets.Button) -> None:
    message = {"method": "custom", "content": {"event": "click"}}
    button._handle_msg({"content": {"data": message}, "buffers": []})
