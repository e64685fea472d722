"""``ToolPanel``: one row per tool — an enable checkbox and an allow/ask/deny policy — acting on
the live registry.

Ticking a box enables the tool in the agent's registry at once (the next request's tool list
shows it); the dropdown sets the agent's approval policy for it. The tool's description is the
checkbox's tooltip. ``refresh()`` re-reads the registry after changes made elsewhere.

A panel's widgets live until ``close_all()``; rows it drops (a tool removed, ``rebind``) are
closed as they go. ``static_bundle()`` (``static_tools_bundle`` without a panel) is the panel as
a plain table: what a kernel nobody watches shows instead of the widgets, and what a live panel's
display becomes once another cell has run — a saved notebook then holds no widget view that
would read "Error displaying widget: model not found" after a kernel restart.
"""

from __future__ import annotations

from typing import Any, Protocol

import ipywidgets as widgets

from ....approvals import POLICIES, Policy
from ....errors import ManagedSettingError
from ....tools.registry import ToolRegistry
from ...inert import html_bundle, html_text, visible
from .inert_html import InertHTML
from .tool_call_group import close_tree
from .tool_call_view import widget_bundle


class ToolOwner(Protocol):
    """What the panel acts on (an ``Agent`` satisfies it)."""

    @property
    def registry(self) -> ToolRegistry: ...

    def get_policy(self, name: str) -> Policy: ...

    def set_policy(self, name: str, policy: Policy) -> None: ...


def tool_description(registry: ToolRegistry, name: str) -> str:
    tool = registry.get_tool(name)
    if tool is None:
        return ""
    return str(tool.get_schema().get("description", "")).strip()


def tools_table(owner: ToolOwner) -> str:
    """The plain table ``%agent_tools list`` prints: name, enabled, policy, description."""
    registry = owner.registry
    names = registry.get_tool_names()
    if not names:
        return "(no tools registered)"
    width = max(len(name) for name in names)
    lines = [f"{'tool'.ljust(width)}  enabled  policy  description"]
    for name in names:
        enabled = "yes" if registry.is_tool_enabled(name) else "no"
        description = tool_description(registry, name).splitlines()
        first_line = description[0] if description else ""
        if len(first_line) > 70:
            first_line = first_line[:69] + "…"
        policy = owner.get_policy(name)
        lines.append(f"{name.ljust(width)}  {enabled.ljust(7)}  {policy.ljust(6)}  {first_line}")
    # Names and descriptions come from MCP servers too: nothing in them may steer a terminal.
    return visible("\n".join(lines))


def static_tools_bundle(owner: ToolOwner, note: str = "") -> dict[str, str]:
    """The tools as they are now, as a table (HTML and plain text, no widget): what a panel
    nobody can click shows, and what a live panel's display becomes when it retires."""
    table = tools_table(owner)
    plain = f"{table}\n{note}" if note else table
    markup = f'<pre style="font-size: 12px; margin: 0;">{html_text(table)}</pre>'
    if note:
        markup += f"<div style='color: #666; font-style: italic;'>{html_text(note)}</div>"
    return html_bundle(markup, plain)


class ToolRow(widgets.HBox):  # type: ignore[misc]
    """The controls for one tool."""

    def __init__(self, owner: ToolOwner, name: str) -> None:
        self.owner = owner
        self.name = name
        registry = owner.registry
        self.checkbox = widgets.Checkbox(
            value=registry.is_tool_enabled(name),
            description=visible(name),  # names and descriptions come from MCP servers too
            tooltip=visible(tool_description(registry, name)),
            indent=False,
            layout=widgets.Layout(width="220px"),
        )
        self.policy = widgets.Dropdown(
            options=list(POLICIES),
            value=owner.get_policy(name),
            tooltip="allow: run freely · ask: wait for your approval · deny: never run",
            layout=widgets.Layout(width="90px"),
        )
        locked = registry.lock(name) if registry.lock is not None else None
        if locked is not None:  # an admin keeps it off (managed settings): greyed, saying so
            self.checkbox.disabled = True
            self.checkbox.tooltip = visible(locked)
        super().__init__(children=[self.checkbox, self.policy])
        self.checkbox.observe(self._on_enabled_change, names="value")
        self.policy.observe(self._on_policy_change, names="value")

    def _on_enabled_change(self, change: dict[str, Any]) -> None:
        if self.owner.registry.has_tool(self.name):
            try:
                self.owner.registry.set_enabled(self.name, bool(change["new"]))
            except ManagedSettingError as exc:  # an admin keeps it off: the box says why
                self.checkbox.value = False
                self.checkbox.tooltip = visible(str(exc))
        # A destructive tool's default policy depends on whether it is enabled.
        self.policy.value = self.owner.get_policy(self.name)

    def _on_policy_change(self, change: dict[str, Any]) -> None:
        if self.owner.registry.has_tool(self.name) and change["new"] in POLICIES:
            self.owner.set_policy(self.name, change["new"])
            # A policy looser than an admin's managed one is judged as that one: shown so.
            self.policy.value = self.owner.get_policy(self.name)

    def refresh(self) -> None:
        registry = self.owner.registry
        self.checkbox.value = registry.is_tool_enabled(self.name)
        self.policy.value = self.owner.get_policy(self.name)


class ToolPanel(widgets.VBox):  # type: ignore[misc]
    """A column of ``ToolRow``s for every registered tool."""

    def __init__(self, owner: ToolOwner) -> None:
        self.owner = owner
        self.rows: dict[str, ToolRow] = {}
        self._header = InertHTML(
            "<b>Agent tools</b> — tick to enable; policy: allow / ask (approve each call) / deny"
        )
        super().__init__(children=[self._header])
        self.refresh()

    def rebind(self, owner: ToolOwner) -> None:
        """Act on ``owner`` from now on (the session's agent was re-created)."""
        self.owner = owner
        for row in self.rows.values():
            close_tree(row)
        self.rows.clear()
        self.refresh()

    def refresh(self) -> None:
        """Match the rows to the registry (new and removed tools, changed states)."""
        names = self.owner.registry.get_tool_names()
        for name in list(self.rows):
            if name not in names:
                close_tree(self.rows.pop(name))
        for name in names:
            if name in self.rows:
                self.rows[name].refresh()
            else:
                self.rows[name] = ToolRow(self.owner, name)
        self.children = (self._header, *(self.rows[name] for name in names))

    def as_text(self) -> str:
        return tools_table(self.owner)

    def static_bundle(self, note: str = "") -> dict[str, str]:
        """The tools as they are now, as a table (HTML and plain text, no widget)."""
        return static_tools_bundle(self.owner, note)

    def close_all(self) -> None:
        """Close the panel and every widget in it."""
        close_tree(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return widget_bundle(self, self.as_text())
