"""The line a ``%%agent`` cell shows about the project instructions that steer the agent.

Project instructions (``AGENTS.md``, else ``CLAUDE.md``) join the system prompt, read afresh for
every turn. A file that changed between cells — by the user, a collaborator, a ``git pull`` or a
tool the user approved — steers the agent from the next cell on, so every cell that runs with
instructions names the file and the first 8 hex digits of its SHA-256, and says when it is new,
changed or gone since the previous cell. Nothing is shown while there are none.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...tools.project_files import find_instructions

__all__ = ["InstructionsNote"]


class InstructionsNote:
    """Remembers the instructions of the previous cell; ``announce`` says the current ones."""

    def __init__(self) -> None:
        self._previous: tuple[str, str] | None = None
        self._cells = 0

    def line(self, workspace: Path) -> str | None:
        """The cell's line about ``workspace``'s project instructions, or None (none now, and
        none in the previous cell)."""
        found = find_instructions(workspace)
        current = (found.name, found.digest) if found is not None else None
        previous, self._previous = self._previous, current
        first = self._cells == 0
        self._cells += 1
        if current is None:
            if previous is None:
                return None
            return (
                f"jupyter-agent: no project instructions now ({previous[0]} is gone since the "
                "previous cell)."
            )
        shown = f"jupyter-agent: project instructions: {current[0]} ({current[1]})"
        if previous is None and not first:
            shown += ", new since the previous cell"
        elif previous is not None and previous != current:
            shown += f", changed since the previous cell (was {previous[0]} ({previous[1]}))"
        return shown + "."

    def announce(self, workspace: Path, notify: Callable[[str], None]) -> None:
        """Say the cell's line, if there is one, through ``notify``."""
        line = self.line(workspace)
        if line is not None:
            notify(line)
