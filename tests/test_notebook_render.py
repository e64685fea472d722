"""The streaming throttle at real model speeds, on a simulated clock, through IPython's display.

A 2,000-token answer must cost tens of display updates whatever the model's speed, and the last
update must be exactly the model's text. The renderer takes its clock as an argument, so the
stream's timing is simulated here instead of slept through.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.events import AgentFinished, TextDelta, TurnFinished, TurnStarted
from jupyter_agent.notebook.render import RichRenderer


class SimulatedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


def stream_answer(tokens: list[str], tokens_per_s: float) -> tuple[list[Any], RichRenderer]:
    clock = SimulatedClock()
    renderer = RichRenderer(clock=clock)
    with capture_output() as captured:
        renderer.handle(TurnStarted(turn=1))
        for token in tokens:
            clock.now += 1 / tokens_per_s
            renderer.handle(TextDelta(token))
        renderer.handle(TurnFinished(turn=1, stop_reason="end_turn"))
        renderer.handle(AgentFinished(text="".join(tokens), stop="end_turn", turns=1))
        renderer.close(interrupted=False)
    markdown = [o for o in captured.outputs if "text/markdown" in o.data]
    return markdown, renderer


@pytest.mark.parametrize("tokens_per_s", [20, 50, 100, 400, 2000])
def test_a_2000_token_answer_costs_at_most_60_updates_at_any_speed(
    shell: InteractiveShell, tokens_per_s: float
) -> None:
    # Tokens of 2 to 9 characters, about 4 on average, as English text tokenises.
    tokens = [("a" * (2 + i % 8)) + (" " if i % 3 else "\n") for i in range(2000)]
    markdown, renderer = stream_answer(tokens, tokens_per_s)
    assert 2 <= len(markdown) <= 60, len(markdown)
    assert renderer.text_updates == len(markdown)
    assert markdown[-1].data["text/markdown"] == "".join(tokens)


def test_a_short_answer_still_updates_every_interval(shell: InteractiveShell) -> None:
    # 150 tokens at 50 tokens/s: 3 s of streaming, short text, so the 0.15 s pace applies.
    markdown, _ = stream_answer([f"w{i} " for i in range(150)], 50)
    assert len(markdown) >= 15
