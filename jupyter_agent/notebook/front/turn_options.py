"""``TurnOptions``: what one ``%%agent`` line asks of its turn, as one value.

The cell's options (its chat, provider, model, ``--max-turns``, ``--think``, ``--budget``,
``--effort``) pass from the magic through the cell's wiring to the session; as one frozen value
they are named once, so a new option is added in one place instead of in four signatures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..session.settings import DEFAULT_CHAT


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """One turn's options; ``None`` means the session's setting."""

    chat: str = DEFAULT_CHAT
    provider: str | None = None
    model: str | None = None
    max_turns: int | None = None
    think: int | None = None
    budget: float | None = None
    effort: str | None = None

    def keywords(self) -> dict[str, Any]:
        """The options as ``NotebookSession.run``'s keyword arguments."""
        return asdict(self)


#: A turn with no options of its own: the default chat, the session's settings.
DEFAULT_TURN = TurnOptions()
