"""The rows ``%agent config`` shows about a session's live agents (after the settings' rows).

Project instructions found, the provider and model that answer, the workspace, the enabled tools,
the chats and their sizes, and whether the agent works in the notebook itself. Taken out of
``session.py``: describing the session is not part of running it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...agent.agent import Agent
from ...tools.project_files import find_instructions
from ..coauthor.link import coauthoring_state
from .settings import DEFAULT_CHAT


def config_rows(
    workspace: Path, chats: dict[str, Agent], shell: Any, in_notebook: bool
) -> list[tuple[str, str]]:
    """Rows about the live agents (``chats``, by name) for ``%agent config``."""
    found = find_instructions(workspace)
    instructions = (
        "project instructions",
        found.describe()
        if found is not None
        else "none (AGENTS.md or CLAUDE.md at the workspace root)",
    )
    primary = chats.get(DEFAULT_CHAT)
    notebook: list[tuple[str, str]] = []
    if in_notebook:
        notebook = [("notebook co-authoring", coauthoring_state(shell))]
    if primary is None:
        return [
            instructions,
            ("agent", "not created yet (the first %%agent cell creates it)"),
            *notebook,
        ]
    registry = primary.registry
    enabled = [n for n in registry.get_tool_names() if registry.is_tool_enabled(n)]
    return [
        instructions,
        ("agent provider", f"{primary.provider.name} ({primary.provider.model})"),
        ("agent workspace", str(primary.context.workspace)),
        ("enabled tools", ", ".join(enabled) or "none"),
        (
            "chats",
            ", ".join(f"{n} ({len(a.messages)} messages)" for n, a in chats.items()),
        ),
        *notebook,
    ]
