"""``CellReplay``: one ``%%agent`` cell's part in reproducibility — replay it, or keep its turn.

When the cell runs, ``CellReplay.for_cell`` looks for the cell's turn record (``sources.py``:
the page, else the saved notebook). A record that verifies, made for this very prompt and these
options, is replayed (``TurnReplay``): no model request, the tools run for real, each result is
checked. Otherwise the turn goes to the model (``TurnCapture`` keeps it) — always with
``%%agent --fresh``, with ``%agent replay off`` (``AgentMagics.replay``), for a changed prompt or
options, and, after a one-line notice, for a record that does not verify. At the end of a
finished turn (not an errored or interrupted one) the record goes into the metadata of the
output that shows the answer, under ``"jupyter_agent.turn"``; a replayed or diverged cell keeps
the record it replayed, so a later run can replay it again.

The magics only create this object, hand ``wrap`` to the session for the turn and call
``finish`` with the outcome (``front/magics.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import SigningError
from ...providers.base import Provider
from .._ipython import argument, magic_arguments, parse_command
from .record import (
    OPTION_NAMES,
    TURN_KEY,
    USAGE_KEYS,
    TurnRecord,
    UnrecordableTurn,
    build_record,
    prompt_digest,
    read_record,
    same_options,
    sign_record,
)
from .sources import find_record
from .turn_provider import TurnCapture, TurnReplay

__all__ = ["CellReplay", "replay_command"]


def cell_options(args: Any) -> dict[str, Any]:
    """The options of a parsed ``%%agent`` line that change its turn (``OPTION_NAMES``)."""
    return {name: getattr(args, name, None) for name in OPTION_NAMES}


class CellReplay:
    """Replays one cell's recorded turn, or keeps the live turn's record.

    ``notify``: how the cell says a line (a refused record, a turn too large to keep, the
    replayed mark). ``spent``: the session's dollars so far (a live turn's cost is the change).
    """

    def __init__(
        self,
        prompt: str,
        options: dict[str, Any],
        record: TurnRecord | None,
        *,
        notify: Callable[[str], None],
        spent: Callable[[], float],
    ) -> None:
        self.prompt = prompt
        self.options = options
        self.record = record
        self._notify = notify
        self._spent = spent
        self._spent_before = spent()
        self._capture: TurnCapture | None = None
        self._replay: TurnReplay | None = TurnReplay(record) if record is not None else None

    @classmethod
    def for_cell(
        cls,
        shell: Any,
        body: str,
        prompt: str,
        args: Any,
        *,
        enabled: bool,
        notify: Callable[[str], None],
        spent: Callable[[], float],
    ) -> CellReplay:
        """The cell's replay: ``body`` as typed (to find its record), ``prompt`` as the model
        would get it, ``args`` the parsed line (``fresh`` asks the model), ``enabled``:
        ``AgentMagics.replay``."""
        options = cell_options(args)
        record = None
        if enabled and not getattr(args, "fresh", False):
            found = find_record(shell, body)
            if found is not None:
                record, problem = read_record(found)
                if problem is not None:
                    notify(
                        f"jupyter-agent: this cell's saved turn was not replayed: {problem}; "
                        "asking the model."
                    )
                elif record is not None and not (
                    record.prompt_sha256 == prompt_digest(prompt)
                    and same_options(record.options, options)
                ):
                    record = None  # another prompt or options: the model is asked
        return cls(prompt, options, record, notify=notify, spent=spent)

    def wrap(self, provider: Provider) -> Provider:
        """The provider the turn runs under: the replay, or ``provider`` kept as it answers."""
        if self._replay is not None:
            return self._replay
        self._capture = TurnCapture(provider)
        return self._capture

    def finish(self, answered: bool, renderer: object) -> None:
        """After the turn: ``answered`` (it finished, not interrupted); the record goes on the
        output that shows the answer (``renderer.keep_with_answer``; a terminal has none)."""
        keep: Callable[[dict[str, Any]], bool] | None = getattr(renderer, "keep_with_answer", None)
        if not answered or keep is None:
            return
        if self._replay is not None and self.record is not None:
            replay = self._replay
            if replay.finished and replay.diverged is None:
                calls = len(self.record.calls)
                ran = (
                    f" ({calls} tool call{'s' * (calls != 1)} ran, results as recorded)"
                    if calls
                    else ""
                )
                self._notify(
                    f"↻ replayed: the recorded turn{ran} — no model request, cost $0. "
                    "(%%agent --fresh asks the model again.)"
                )
            keep({TURN_KEY: self.record.raw})  # replayable again, also after a divergence
            return
        capture = self._capture
        if capture is None or not capture.complete:
            return
        usage = {key: 0 for key in USAGE_KEYS}
        for reply in capture.replies:
            for key in USAGE_KEYS:
                usage[key] += int((reply.get("usage") or {}).get(key, 0))
        cost = max(0.0, self._spent() - self._spent_before)
        try:
            record = sign_record(
                build_record(
                    prompt=self.prompt,
                    options=self.options,
                    model=capture.answered_by,
                    replies=capture.replies,
                    calls=capture.calls,
                    usage=usage,
                    cost_micro_usd=round(cost * 1_000_000),
                )
            )
        except (UnrecordableTurn, SigningError) as exc:
            self._notify(f"jupyter-agent: this cell's turn was not kept for replay: {exc}")
            return
        except (TypeError, ValueError, RecursionError):  # a model's reply JSON cannot carry
            self._notify(  # (NaN, a lone surrogate, nesting past any reason): not kept
                "jupyter-agent: this cell's turn was not kept for replay: the model's replies "
                "hold values a notebook cannot keep"
            )
            return
        keep({TURN_KEY: record})


@magic_arguments("agent replay")
@argument(
    "state",
    nargs="?",
    choices=("on", "off"),
    default=None,
    help="on: a re-run cell with a recorded turn replays it; off: every cell asks the model.",
)
def replay_command(magics: Any, rest: str) -> None:
    """Replay recorded %%agent turns on a re-run (on by default), or ask the model every time."""
    args = parse_command(replay_command, rest)
    if args.state is not None:
        magics.replay = args.state == "on"
    if magics.replay:
        print(
            "Replay is on: a re-run %%agent cell with a recorded turn for the same prompt "
            "replays it without a model request (%%agent --fresh asks the model)."
        )
    else:
        print("Replay is off: every %%agent cell asks the model (%agent replay on to replay).")
