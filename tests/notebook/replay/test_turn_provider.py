"""``TurnCapture`` keeps a live turn, ``TurnReplay`` acts it again: through a real ``Agent``.

The model of the live turn is the offline provider playing a cassette (no network); the tools
are the package's, on files in a temporary workspace.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.agent.agent import Agent
from jupyter_agent.approvals import ApprovalRequest, Decision
from jupyter_agent.notebook.replay.record import (
    UnrecordableTurn,
    build_record,
    read_record,
    sign_record,
)
from jupyter_agent.notebook.replay.turn_provider import (
    TurnCapture,
    TurnReplay,
    call_results,
    replied_since_prompt,
)
from jupyter_agent.providers.demo_model import find_prompt
from jupyter_agent.providers.offline import OfflineProvider

PROMPT = "Compare the files."


def _use(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"file_path": path}}


CASSETTE = [
    {
        "prompt": PROMPT,
        "responses": [
            {"content": [_use("toolu_1", "a.txt"), _use("toolu_2", "b.txt")]},
            {"content": [{"type": "text", "text": "Reading c."}, _use("toolu_3", "c.txt")]},
            {"content": [{"type": "text", "text": "They differ."}], "stop_reason": "end_turn"},
        ],
    }
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text(f"file {name}\n")
    return tmp_path


def _record(workspace: Path) -> Any:
    capture = TurnCapture(OfflineProvider(CASSETTE, notice=False))
    answer = asyncio.run(Agent(capture, workspace=workspace).chat(PROMPT))
    assert answer.endswith("They differ.")
    assert capture.complete and len(capture.calls) == 3
    fields = {"prompt": PROMPT, "options": {}, "usage": {}, "cost_micro_usd": 0}
    signed = sign_record(
        build_record(model="m", replies=capture.replies, calls=capture.calls, **fields)
    )
    turn, problem = read_record(signed)
    assert turn is not None, problem
    return turn


def _replay(turn: Any, workspace: Path) -> tuple[TurnReplay, str]:
    replay = TurnReplay(turn)
    return replay, asyncio.run(Agent(replay, workspace=workspace).chat(PROMPT))


def test_a_replay_gives_the_recorded_answer_and_checks_every_result(workspace: Path) -> None:
    replay, answer = _replay(_record(workspace), workspace)
    assert answer.endswith("They differ.")
    assert replay.finished and replay.diverged is None and replay.matched == 3


@pytest.mark.parametrize(("changed", "ordinal"), [("a", 1), ("b", 2), ("c", 3)])
def test_the_first_changed_result_stops_the_replay(
    workspace: Path, changed: str, ordinal: int
) -> None:
    turn = _record(workspace)
    (workspace / f"{changed}.txt").write_text("changed\n")
    replay, answer = _replay(turn, workspace)
    assert replay.diverged is not None and replay.diverged.ordinal == ordinal
    assert f'call {ordinal} (read_file {{"file_path": "{changed}.txt"}})' in answer
    assert "They differ." not in answer  # the reply made for the old data is not used
    if ordinal < 3:
        assert "Reading c." not in answer


def test_a_tool_disabled_now_is_a_divergence_not_a_call(workspace: Path) -> None:
    turn = _record(workspace)
    replay = TurnReplay(turn)
    agent = Agent(replay, workspace=workspace)
    agent.registry.disable("read_file")
    answer = asyncio.run(agent.chat(PROMPT))
    assert replay.diverged is not None and replay.matched == 0
    assert 'call 1 (read_file {"file_path": "a.txt"})' in answer


def test_a_turn_whose_results_were_not_all_seen_is_not_recorded() -> None:
    replies = [{"content": [_use("toolu_1", "a.txt")]}, {"content": []}]
    with pytest.raises(UnrecordableTurn, match="not replayable"):
        build_record(
            prompt=PROMPT,
            options={},
            model="m",
            replies=replies,
            calls=[],
            usage={},
            cost_micro_usd=0,
        )


def test_a_replayed_call_asks_for_approval_again_and_a_no_stops_it(workspace: Path) -> None:
    turn = _record(workspace)  # recorded with read_file allowed
    asked: list[ApprovalRequest] = []

    async def deny(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision(False, "not today")

    replay = TurnReplay(turn)
    agent = Agent(replay, workspace=workspace, approval_handler=deny)
    agent.set_policy("read_file", "ask")
    answer = asyncio.run(agent.chat(PROMPT))
    assert [request.name for request in asked] == ["read_file", "read_file"]
    assert replay.diverged is not None and replay.diverged.ordinal == 1
    assert "They differ." not in answer and "Reading c." not in answer


def test_a_replayed_call_approved_again_runs(workspace: Path) -> None:
    turn = _record(workspace)

    async def approve(request: ApprovalRequest) -> Decision:
        return Decision(True)

    replay = TurnReplay(turn)
    agent = Agent(replay, workspace=workspace, approval_handler=approve)
    agent.set_policy("read_file", "ask")
    assert asyncio.run(agent.chat(PROMPT)).endswith("They differ.")
    assert replay.finished and replay.diverged is None


def test_a_tool_input_that_is_not_an_object_is_read_as_no_arguments() -> None:
    """An OpenAI-compatible server's unparseable arguments stay a string in the conversation
    (``openai_compat``: the agent answers them with an error result); reading the turn's calls
    for its record must take that in its stride, not end the live turn."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "do it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "read_file", "input": "{not"}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "Error", "is_error": True}
            ],
        },
    ]
    (call,) = call_results(messages)
    assert call.input == {} and call.is_error


_USE = {"type": "tool_use", "id": "c1", "name": "read_file", "input": {}}
_RESULT = {"type": "tool_result", "tool_use_id": "c1", "content": "x"}


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": "Go."}],
        [
            {"role": "user", "content": "Go."},
            {"role": "assistant", "content": [_USE]},
            {"role": "user", "content": [_RESULT]},
            {"role": "assistant", "content": [_USE]},
            {"role": "user", "content": [_RESULT]},
        ],
        [
            {"role": "user", "content": [{"type": "text", "text": "First."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "One."}]},
            {"role": "user", "content": [_RESULT, {"type": "text", "text": "Second."}]},
            {"role": "assistant", "content": [_USE]},
        ],
        [{"role": "assistant", "content": "no prompt"}, {"role": "user", "content": None}],
    ],
)
def test_the_replays_turn_count_is_the_prompts(messages: list[dict[str, Any]]) -> None:
    """``TurnReplay`` counts the turns since the prompt as ``find_prompt`` does."""
    assert replied_since_prompt(messages) == find_prompt(messages)[1]
