"""The streaming throttle at real model speeds, on a simulated clock, through IPython's display.

A 2,000-token answer must cost tens of display updates whatever the model's speed, and the last
update must be exactly the model's text. The renderer takes its clock as an argument, so the
stream's timing is simulated here instead of slept through; so is a flood of a call's progress,
whose title is throttled the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.events import (
    AgentFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from jupyter_agent.notebook.inert import is_answer
from jupyter_agent.notebook.views.rich_renderer import RichRenderer


class SimulatedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def bare_shell() -> Iterator[InteractiveShell]:
    """IPython's display machinery, without the extension."""
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
    markdown = [o for o in captured.outputs if is_answer(o.metadata)]
    return markdown, renderer


@pytest.mark.parametrize("tokens_per_s", [20, 50, 100, 400, 2000])
def test_a_2000_token_answer_costs_at_most_60_updates_at_any_speed(
    bare_shell: InteractiveShell, tokens_per_s: float
) -> None:
    # Tokens of 2 to 9 characters, about 4 on average, as English text tokenises.
    tokens = [("a" * (2 + i % 8)) + (" " if i % 3 else "\n") for i in range(2000)]
    markdown, renderer = stream_answer(tokens, tokens_per_s)
    assert 2 <= len(markdown) <= 60, len(markdown)
    assert renderer.text_updates == len(markdown)
    assert markdown[-1].data["text/plain"] == "".join(tokens)


def test_a_short_answer_still_updates_every_interval(bare_shell: InteractiveShell) -> None:
    # 150 tokens at 50 tokens/s: 3 s of streaming, short text, so the 0.15 s pace applies.
    markdown, _ = stream_answer([f"w{i} " for i in range(150)], 50)
    assert len(markdown) >= 15


def test_thinking_shows_collapsed_and_a_compaction_says_what_it_did(
    bare_shell: InteractiveShell,
) -> None:
    """Issue 12: the notebook shows thinking as a collapsed block (never in the answer) and a
    compaction as a notice with the token counts before and after."""
    from jupyter_agent.events import ContextCompacted, ThinkingDelta

    clock = SimulatedClock()
    renderer = RichRenderer(clock=clock)
    with capture_output() as captured:
        renderer.handle(TurnStarted(turn=1))
        renderer.handle(
            ContextCompacted(tokens_before=180_000, tokens_after=42_000, stubbed=12, folded=30)
        )
        for piece in ("Let me ", "check the <data> first."):
            clock.now += 0.01
            renderer.handle(ThinkingDelta(piece))
        renderer.handle(TextDelta("The answer."))
        renderer.handle(TurnFinished(turn=1, stop_reason="end_turn"))
        renderer.handle(AgentFinished(text="The answer.", stop="end_turn", turns=1))
        renderer.close(interrupted=False)
    html = [o.data["text/html"] for o in captured.outputs if "text/html" in o.data]
    thinking = [h for h in html if h.startswith("<details>")]
    assert thinking and "Let me check the &lt;data&gt; first." in thinking[-1]
    assert "<summary><i>Thinking (30 characters)</i></summary>" in thinking[-1]
    notices = [h for h in html if "Context compacted" in h]
    assert notices and "180,000 → 42,000 tokens" in notices[0]
    # … and what it did
    assert "12 tool results made stubs; 30 tool calls folded into a note" in notices[0]
    assert renderer.text == "The answer."  # thinking never joins the answer


def test_a_flood_of_progress_redraws_a_title_each_interval_and_the_latest_shows(
    bare_shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 progress events in a simulated second: the call's title is redrawn at most once
    per render interval, not once an event; the latest, held back, shows at the next tick."""
    import comm
    from ipywidgets.widgets.tests.utils import setup_test_comm, teardown_test_comm
    from widget_frontend import Frontend

    setup_test_comm()
    frontend = Frontend()
    monkeypatch.setattr(comm, "create_comm", frontend.create_comm)
    clock = SimulatedClock()
    renderer = RichRenderer(clock=clock)
    try:
        with capture_output():
            renderer.handle(TurnStarted(turn=1))
            renderer.handle(ToolCallStarted("c1", "srv__steps", {"gate": "g"}))
            [button] = [
                model
                for model in frontend.models.values()
                if model.opened_state.get("_model_name") == "ToggleButtonModel"
            ]
            for index in range(1, 10_001):
                clock.now += 0.0001
                renderer.handle(ToolCallProgress("c1", "srv__steps", index, 10_000, f"s{index}"))
            redraws = len(button.messages)
            assert 1 <= redraws <= 1 + 1 / renderer.interval_s, redraws
            clock.now += renderer.interval_s  # a quiet period
            renderer.tick()
            title = str(frontend.state(button.comm_id)["description"])
            assert title.endswith(") · running · 10000/10000 · s10000"), title
            renderer.handle(ToolCallFinished("c1", "srv__steps", "ok", False, 1.0))
            renderer.close(interrupted=False)
    finally:
        teardown_test_comm()


def test_progress_between_tool_calls_shows_as_it_streams_apart_from_the_answer(
    bare_shell: InteractiveShell,
) -> None:
    """Issue 32, fault 2: the progress text current models write between tool calls (it comes in
    thinking blocks) is shown in the cell — sanitised, not collapsed — apart from the answer,
    and reasoning stays collapsed."""
    from jupyter_agent.events import ThinkingDelta

    clock = SimulatedClock()
    renderer = RichRenderer(clock=clock)
    with capture_output() as captured:
        renderer.handle(TurnStarted(turn=1))
        renderer.handle(ThinkingDelta("Mapped effort.", kind="notice"))
        for piece in ("Reading ", "the <data> first."):
            clock.now += 0.01
            renderer.handle(ThinkingDelta(piece, kind="progress"))
        renderer.handle(ThinkingDelta("secret reasoning"))
        renderer.handle(TextDelta("The answer."))
        renderer.close(interrupted=False)
    html = [o.data["text/html"] for o in captured.outputs if "text/html" in o.data]
    shown = [h for h in html if "Reading the &lt;data&gt; first." in h]
    assert shown and not shown[-1].startswith("<details>")
    assert any("Mapped effort." in h for h in html)
    assert any(h.startswith("<details>") and "secret reasoning" in h for h in html)
    assert renderer.text == "The answer."
    plain = [o.data["text/plain"] for o in captured.outputs if "text/plain" in o.data]
    assert "… Reading the <data> first." in plain  # the static record's text


def test_the_terminal_says_so_too(capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_agent.events import ContextCompacted, ThinkingDelta
    from jupyter_agent.notebook.views.text_renderer import TextRenderer

    renderer = TextRenderer()
    renderer.handle(ContextCompacted(tokens_before=1000, tokens_after=400))
    renderer.handle(ThinkingDelta("hmm"))
    renderer.handle(ThinkingDelta("mm"))
    renderer.handle(ThinkingDelta("Looking at the \x1b[2Jfile.", kind="progress"))
    renderer.handle(TextDelta("Done."))
    renderer.close(interrupted=False)
    out = capsys.readouterr().out
    assert "1,000 → 400 tokens" in out
    assert out.count("[thinking …]") == 1 and "hmm" not in out
    assert "… Looking at the " in out and "\x1b[2J" not in out  # progress, escaped
    assert out.rstrip().endswith("Done.")
