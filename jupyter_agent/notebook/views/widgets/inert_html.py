"""``InertHTML``: the one HTML widget of the package, whose value is always sanitized.

Every ``widgets.HTML`` the views used held markup with tool results and arguments in it; the
frontend puts a widget's HTML into the page as it is. This subclass cleans each value it is given
with ``inert.view_html`` (the nh3 allowlist) before it is stored or sent, so a view that forgot to
escape something still shows nothing active.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from traitlets import validate

from ...inert import view_html


class InertHTML(widgets.HTML):  # type: ignore[misc]
    """An HTML widget whose ``value`` passes the view allowlist on every assignment."""

    @validate("value")
    def _clean(self, proposal: dict[str, Any]) -> str:
        return view_html(str(proposal["value"]))
