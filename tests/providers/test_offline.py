"""The offline model: cassette replay, the demo model, recording, and the default provider choice.

Everything runs through the real ``Agent`` with the real built-in file tools in a temporary
workspace; the recording test records a session of the real ``anthropic`` SDK (against the fake
Messages API) and replays it offline.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, api_problems, text, tool_use

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import (
    AgentEvent,
    AgentFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.auto import select_default_provider
from jupyter_agent.providers.offline import (
    OFFLINE_NOTICE,
    REPLAY_NOTICE,
    OfflineProvider,
    RecordingProvider,
    load_cassette,
)
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files.files import ListDirTool, ReadFileTool, WriteFileTool
from jupyter_agent.tools.registry import ToolRegistry
from jupyter_agent.tools.search.search import SearchFilesTool

ROWS = [
    ("month", "region", "units", "revenue"),
    ("2024-01", "North", "10", "100.50"),
    ("2024-01", "South", "20", "200.25"),
    ("2024-02", "North", "30", "300.00"),
    ("2024-02", "South", "40", "399.25"),
]


def file_registry(workspace: Path) -> ToolRegistry:
    context = ToolContext(workspace)
    registry = ToolRegistry()
    for cls in (ReadFileTool, WriteFileTool, ListDirTool, SearchFilesTool):
        registry.register(cls(context))
    return registry


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    with (tmp_path / "data" / "sales.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(ROWS)
    (tmp_path / "notes.md").write_text("# Notes\n\nFirst line.\nSecond line.\n")
    return tmp_path


def offline_agent(workspace: Path, provider: OfflineProvider | None = None) -> Agent:
    return Agent(
        provider or OfflineProvider(),
        workspace=workspace,
        registry=file_registry(workspace),
    )


async def collect(agent: Agent, prompt: str) -> list[AgentEvent]:
    return [event async for event in agent.stream_chat(prompt)]


def final_of(events: list[AgentEvent]) -> AgentFinished:
    final = events[-1]
    assert isinstance(final, AgentFinished)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == final.text
    return final


async def test_demo_model_answers_a_csv_question_with_a_real_read(workspace: Path) -> None:
    agent = offline_agent(workspace)
    events = await collect(agent, "What is in data/sales.csv?")
    calls = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(c.name, c.input) for c in calls] == [("read_file", {"file_path": "data/sales.csv"})]
    results = [e for e in events if isinstance(e, ToolCallFinished)]
    assert not results[0].is_error and results[0].output.startswith("month,region")
    final = final_of(events)
    assert final.text.startswith(OFFLINE_NOTICE + "\n")
    assert "4 data rows and 4 columns" in final.text
    assert "`month`, `region`, `units`, `revenue`" in final.text
    assert "| units | 100 | 25 | 10 | 40 |" in final.text
    assert "| revenue | 1,000 | 250 | 100.50 | 399.25 |" in final.text
    assert "ANTHROPIC_API_KEY" in final.text.splitlines()[-1]
    assert len([e for e in events if isinstance(e, TextDelta)]) > 10  # it streams
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]


async def test_demo_model_groups_by_a_column_the_prompt_names(workspace: Path) -> None:
    agent = offline_agent(workspace)
    answer = await agent.chat("Total revenue by region in data/sales.csv?")
    assert "By `region`:" in answer
    assert "| South | 599.50 |" in answer and "| North | 400.50 |" in answer
    assert answer.index("| South |") < answer.index("| North |")  # largest first


async def test_demo_model_finds_csv_files_then_reads_them(workspace: Path) -> None:
    agent = offline_agent(workspace)
    events = await collect(agent, "Summarise the CSV data for me")
    calls = [(e.name, e.input) for e in events if isinstance(e, ToolCallStarted)]
    assert calls == [
        ("search_files", {"pattern": "**/*.csv"}),
        ("read_file", {"file_path": "data/sales.csv"}),
    ]
    final = final_of(events)
    assert "4 data rows" in final.text and final.turns == 3


async def test_demo_model_lists_files_and_reports_errors(workspace: Path) -> None:
    agent = offline_agent(workspace)
    listing = await agent.chat("list the files please")
    assert "notes.md" in listing and "data" in listing
    missing = await agent.chat("show me missing.txt")
    assert "`read_file` failed" in missing
    helpless = await agent.chat("hello there")
    assert helpless.startswith(OFFLINE_NOTICE)
    assert "without an API key it can only work with the files" in helpless
    assert (
        api_problems(
            {
                "model": "m",
                "max_tokens": 1,
                "messages": [*agent.messages, {"role": "user", "content": "next"}],
            }
        )
        == []
    )


def write_cassette(path: Path, exchanges: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"exchanges": exchanges}))


async def test_cassette_replay_runs_the_recorded_tool_calls_for_real(workspace: Path) -> None:
    cassette = workspace / "session.json"
    write_cassette(
        cassette,
        [
            {
                "prompt": "Write a greeting to hello.txt and read it back",
                "responses": [
                    {
                        "content": [
                            {"type": "text", "text": "Writing the file."},
                            {
                                "type": "tool_use",
                                "id": "toolu_rec_1",
                                "name": "write_file",
                                "input": {"file_path": "hello.txt", "content": "Hello, world!\n"},
                            },
                        ],
                        "stop_reason": "tool_use",
                        "usage": {"input_tokens": 120, "output_tokens": 30},
                    },
                    {
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "toolu_rec_2",
                                "name": "read_file",
                                "input": {"file_path": "hello.txt"},
                            }
                        ],
                        "stop_reason": "tool_use",
                        "usage": {"input_tokens": 160, "output_tokens": 20},
                    },
                    {
                        "content": [{"type": "text", "text": "The file says hello."}],
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": 200, "output_tokens": 10},
                    },
                ],
            }
        ],
    )
    agent = offline_agent(workspace, OfflineProvider(cassette))
    events = await collect(agent, "  write a GREETING to hello.txt   and read it back ")
    assert (workspace / "hello.txt").read_text() == "Hello, world!\n"
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.name for e in finished] == ["write_file", "read_file"]
    assert finished[1].output == "Hello, world!\n"
    final = final_of(events)
    assert final.text == f"{REPLAY_NOTICE}\n\nWriting the file.\n\nThe file says hello."
    assert final.turns == 3 and final.usage.input_tokens == 480
    # a prompt that was not recorded falls back to the demo model
    other = await agent.chat("list the files")
    assert other.startswith(OFFLINE_NOTICE) and "hello.txt" in other


async def test_a_recorded_argument_can_take_a_value_from_an_earlier_result_of_the_run(
    workspace: Path,
) -> None:
    """``{"$from_result": id, "find": regex}`` is what this run's result of call ``id`` says
    (the id of a cell inserted in the notebook that replays); unmatched, a sentence saying so."""

    def use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        content = [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
        return {"content": content, "stop_reason": "tool_use"}

    cassette = workspace / "session.json"
    found = {"$from_result": "toolu_1", "find": r"Wrote \d+ \w+ to (\S+)"}
    missing = {"$from_result": "toolu_9", "find": "(.*)"}
    write_cassette(
        cassette,
        [
            {
                "prompt": "write then read",
                "responses": [
                    use("toolu_1", "write_file", {"file_path": "made.txt", "content": "x\n"}),
                    use("toolu_2", "read_file", {"file_path": found}),
                    use("toolu_3", "read_file", {"file_path": missing}),
                    {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"},
                ],
            }
        ],
    )
    agent = offline_agent(workspace, OfflineProvider(cassette))
    events = await collect(agent, "write then read")
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.name for e in finished] == ["write_file", "read_file", "read_file"]
    assert "made.txt" in finished[0].output, finished[0].output
    assert not finished[1].is_error and finished[1].output == "x\n", finished[1].output
    assert finished[2].is_error
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert "needs the result of toolu_9" in started[2].input["file_path"]


async def test_a_session_replayed_twice_in_one_chat_takes_each_runs_own_results(
    workspace: Path,
) -> None:
    """The second replay's calls reuse the recorded ids, which the conversation already holds,
    so the agent gives them fresh ones: every ``$from_result`` of the second replay said "this
    run lacks" the result it names."""

    def use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        content = [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
        return {"content": content, "stop_reason": "tool_use"}

    cassette = workspace / "session.json"
    found = {"$from_result": "toolu_1", "find": r"Wrote \d+ \w+ to (\S+)"}
    write_cassette(
        cassette,
        [
            {
                "prompt": "write then read",
                "responses": [
                    use("toolu_1", "write_file", {"file_path": "made.txt", "content": "x\n"}),
                    use("toolu_2", "read_file", {"file_path": found}),
                    {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"},
                ],
            }
        ],
    )
    agent = offline_agent(workspace, OfflineProvider(cassette))
    for replay in ("first", "second"):
        events = await collect(agent, "write then read")
        finished = [e for e in events if isinstance(e, ToolCallFinished)]
        assert [e.name for e in finished] == ["write_file", "read_file"], replay
        assert not finished[1].is_error and finished[1].output == "x\n", (
            replay,
            finished[1].output,
        )


async def test_a_pattern_exchange_replays_prompts_that_differ_where_it_has_stars(
    workspace: Path,
) -> None:
    """``%agent error``'s prompt holds an execution count and a traceback naming this machine's
    paths: a cassette entry with ``"match": "pattern"`` replays whatever its ``*`` stand for."""
    answer = {"content": [{"type": "text", "text": "A typo."}], "stop_reason": "end_turn"}
    cassette = [
        {"prompt": "Cell [*] raised. The traceback: *", "match": "pattern", "responses": [answer]},
        {"prompt": "exactly this*", "responses": [answer]},
    ]
    agent = offline_agent(workspace, OfflineProvider(cassette, notice=False))
    traceback = "File \"/tmp/ipykernel_5392/231.py\", line 1\nKeyError: 'unit'"
    assert await agent.chat(f"cell [4]  raised. The traceback:\n{traceback}") == "A typo."
    assert await agent.chat("Cell [12] raised. The traceback: other") == "A typo."
    # the text around the stars must match, and exact matching stays the rule elsewhere
    assert await agent.chat("Cell [4] failed. The traceback: x") != "A typo."
    assert await agent.chat("exactly this, and more") != "A typo."


def test_an_unknown_match_rule_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"prompt": "x", "match": "prefix", "responses": []}]))
    with pytest.raises(ValueError, match=r"exchange 0 has 'match' 'prefix'"):
        OfflineProvider(path)


def comparable(events: list[AgentEvent]) -> list[Any]:
    """Events with streaming chunking, durations and model names taken out.

    The tools of one reply run concurrently and ``ToolCallFinished`` comes as each one ends, so
    within a run of consecutive finished events the order is the tools', not the model's: such
    a run is compared in call-id order (every event of it still has to be there, once).
    """
    out: list[Any] = []
    finished: list[ToolCallFinished] = []
    for event in events:
        if isinstance(event, ToolCallFinished):
            finished.append(dataclasses.replace(event, duration_s=0.0))
            continue
        out.extend(sorted(finished, key=lambda e: e.call_id))
        finished = []
        if isinstance(event, TextDelta):
            if out and isinstance(out[-1], str):
                out[-1] += event.text
            else:
                out.append(event.text)
        elif isinstance(event, TurnStarted):
            out.append(dataclasses.replace(event, model=""))
        else:
            out.append(event)
    out.extend(sorted(finished, key=lambda e: e.call_id))
    return out


async def test_recording_round_trip_replays_the_same_events(tmp_path: Path) -> None:
    recorded_ws = tmp_path / "recorded"
    replayed_ws = tmp_path / "replayed"
    for ws in (recorded_ws, replayed_ws):
        ws.mkdir()
        (ws / "numbers.txt").write_text("1\n2\n3\n")
    fake = FakeAnthropic(
        Reply(
            [
                {"type": "text", "text": "I'll read it and look around."},
                tool_use("toolu_1", "read_file", {"file_path": "numbers.txt"}),
                tool_use("toolu_2", "list_dir", {}),
            ],
            usage={"input_tokens": 50, "output_tokens": 12, "cache_read_input_tokens": 7},
        ),
        text("The numbers add up to 6."),
        text("You're welcome."),
    )
    cassette = tmp_path / "cassettes" / "session.json"
    recorder = RecordingProvider(
        AnthropicProvider("claude-sonnet-5-5", client=fake.client()), cassette
    )
    assert (recorder.name, recorder.model) == ("anthropic", "claude-sonnet-5-5")
    live = Agent(recorder, workspace=recorded_ws, registry=file_registry(recorded_ws))
    live_events = [await collect(live, "Add up numbers.txt"), await collect(live, "thanks")]

    exchanges = load_cassette(cassette)
    assert [e["prompt"] for e in exchanges] == ["Add up numbers.txt", "thanks"]
    assert [len(e["responses"]) for e in exchanges] == [2, 1]
    assert exchanges[0]["responses"][0]["usage"]["cache_read_input_tokens"] == 7

    replay = Agent(
        OfflineProvider(cassette, notice=False),
        workspace=replayed_ws,
        registry=file_registry(replayed_ws),
    )
    replay_events = [await collect(replay, "Add up numbers.txt"), await collect(replay, "thanks")]
    assert comparable(replay_events[0]) == comparable(live_events[0])
    assert comparable(replay_events[1]) == comparable(live_events[1])
    assert replay.messages == live.messages

    # with the notice on, the only difference is the notice in front of the answer
    noticed = Agent(
        OfflineProvider(cassette), workspace=replayed_ws, registry=file_registry(replayed_ws)
    )
    text_with_notice = await noticed.chat("add up numbers.txt")
    assert text_with_notice == f"{REPLAY_NOTICE}\n\n" + live_events[0][-1].text  # type: ignore[union-attr]


async def test_recording_extends_an_existing_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "c.json"
    first = RecordingProvider(OfflineProvider(), cassette)
    await Agent(first, workspace=tmp_path, registry=file_registry(tmp_path)).chat("hello")
    second = RecordingProvider(OfflineProvider(), cassette)
    await Agent(second, workspace=tmp_path, registry=file_registry(tmp_path)).chat("hi again")
    assert [e["prompt"] for e in load_cassette(cassette)] == ["hello", "hi again"]


def test_select_default_provider(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
    monkeypatch.delenv("JUPYTER_AGENT_MODEL", raising=False)
    cassette = tmp_path / "c.json"
    write_cassette(
        cassette, [{"prompt": "hi", "responses": [{"content": [{"type": "text", "text": "hey"}]}]}]
    )
    offline = select_default_provider(cassette=cassette)
    assert isinstance(offline, OfflineProvider) and offline.name == "offline"
    assert offline.exchanges[0]["prompt"] == "hi"

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    claude = select_default_provider(model="claude-x")
    assert isinstance(claude, AnthropicProvider) and claude.model == "claude-x"

    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "offline")
    assert isinstance(select_default_provider(), OfflineProvider)
    monkeypatch.setenv("JUPYTER_AGENT_PROVIDER", "bogus")
    with pytest.raises(ValueError, match="bogus"):
        select_default_provider()


def test_bad_cassette_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"prompt": "x"}]))
    with pytest.raises(ValueError, match="exchange 0"):
        OfflineProvider(path)
