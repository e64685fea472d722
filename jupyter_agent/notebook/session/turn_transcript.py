"""What one turn said, gathered as its events go by: ``TurnTranscript``, and the ``TurnOutcome``
it ends in.

The answer streams in as deltas; a ``TextReset`` voids what the current model request said so far
(it is being retried), and the agent's final text, when there is one, wins over the streamed
pieces. Each request's usage goes into the session's ledger under the model that answered it.
The offline demo model's notice and footer are not part of the answer. Taken out of
``NotebookSession.run`` so the turn there reads as: set up, run, outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...events import AgentFinished, TextDelta, TextReset, TurnFinished, TurnStarted
from ...providers.base import Provider
from ..runtime.console import PrintedText
from ..spend.pricing import UsageLedger


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one turn ended: the full final text and the answer alone (``None`` if interrupted)."""

    text: str | None
    #: ``text`` without what only labels it (the offline model's notice and footer).
    answer: str | None
    interrupted: bool = False


class TurnTranscript:
    """The text and usage of the turn that runs, from its events (on the main thread)."""

    def __init__(
        self, model: str, ledger: UsageLedger, on_event: Callable[[object], None] | None
    ) -> None:
        #: The model that answers now (a turn's requests may name another).
        self.model = model
        self._ledger = ledger
        self._on_event = on_event
        self._final: str | None = None
        self._streamed: list[str] = []
        #: Where the current request's text starts in ``_streamed`` (a ``TextReset`` voids it).
        self._turn_starts_at = 0

    def handle(self, event: object) -> None:
        """Take one event, then hand it to ``on_event``; prints from the agent's threads show."""
        if isinstance(event, PrintedText):
            event.show()
            return
        if isinstance(event, TextDelta):
            self._streamed.append(event.text)
        elif isinstance(event, TextReset):
            del self._streamed[self._turn_starts_at :]
        elif isinstance(event, TurnStarted):
            self._turn_starts_at = len(self._streamed)
            if event.model:
                self.model = event.model
        elif isinstance(event, TurnFinished):
            self._ledger.add(self.model, event.usage)
        elif isinstance(event, AgentFinished):
            self._final = event.text
        if self._on_event is not None:
            self._on_event(event)

    def outcome(self, provider: Provider) -> TurnOutcome:
        """The turn's outcome once it ended (not interrupted), ``provider`` having answered."""
        text = self._final if self._final is not None else "".join(self._streamed)
        return TurnOutcome(text, _answer_only(provider, text))


def _answer_only(provider: Provider, text: str) -> str:
    if provider.name != "offline":
        return text
    from ...providers.offline import answer_only

    return answer_only(text)
