"""The runner: one background loop, a main-thread pump, interrupts — in-process and in scripts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from jupyter_agent.events import TextDelta
from jupyter_agent.notebook.runtime import bridge as main_bridge
from jupyter_agent.notebook.runtime.bridge import (
    BackgroundLoop,
    MainThreadBridge,
    NotPumpingError,
    forward_events,
)

TESTS = Path(__file__).parents[2]


@pytest.fixture
def bridge() -> Iterator[MainThreadBridge]:
    loop = BackgroundLoop()
    yield MainThreadBridge(loop)
    loop.close()


def test_events_arrive_in_order_and_main_thread_calls_run_on_the_main_thread(
    bridge: MainThreadBridge,
) -> None:
    seen: list[object] = []

    async def work() -> str:
        assert bridge.background.in_loop_thread()
        for i in range(100):
            bridge.post(i)
        thread_name = await bridge.call_on_main(lambda: threading.current_thread().name)
        bridge.post("after")
        return thread_name

    outcome = bridge.run(work(), seen.append)
    assert outcome.value == threading.main_thread().name
    assert not outcome.interrupted
    assert seen == [*range(100), "after"]


def test_the_loop_is_the_same_for_every_run(bridge: MainThreadBridge) -> None:
    async def current_loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    first = bridge.run(current_loop(), lambda _e: None).value
    second = bridge.run(current_loop(), lambda _e: None).value
    assert first is second is bridge.background.loop


def test_errors_travel_both_ways(bridge: MainThreadBridge) -> None:
    def fails_on_main() -> None:
        raise ValueError("bad on main")

    async def work() -> str:
        try:
            await bridge.call_on_main(fails_on_main)
        except ValueError as exc:
            raise RuntimeError(f"seen: {exc}") from exc
        return "unreachable"

    with pytest.raises(RuntimeError, match="seen: bad on main"):
        bridge.run(work(), lambda _e: None)


def test_main_thread_work_needs_a_running_pump(bridge: MainThreadBridge) -> None:
    with pytest.raises(NotPumpingError):
        bridge.background.run(bridge.call_on_main(lambda: 1))


def test_a_failing_renderer_cancels_the_background_task(bridge: MainThreadBridge) -> None:
    cancelled = threading.Event()

    async def work() -> None:
        bridge.post("boom")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def on_event(_event: object) -> None:
        raise KeyError("renderer bug")

    with pytest.raises(KeyError):
        bridge.run(work(), on_event)
    assert cancelled.is_set()


def test_runs_under_a_running_event_loop(bridge: MainThreadBridge) -> None:
    async def caller() -> object:
        # a kernel or an async app: the calling thread's loop is running
        async def work() -> int:
            await asyncio.sleep(0.01)
            return 42

        return bridge.run(work(), lambda _e: None).value

    assert asyncio.run(caller()) == 42


SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys, threading
    sys.path.insert(0, {tests!r})
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from jupyter_agent.agent.agent import Agent
    from jupyter_agent.events import AgentFinished, ToolCallFinished
    from jupyter_agent.notebook.views.text_renderer import TextRenderer
    from jupyter_agent.notebook.runtime.bridge import (
        BackgroundLoop,
        MainThreadBridge,
        forward_events,
    )
    from jupyter_agent.providers.anthropic import AnthropicProvider

    class Never:
        async def wait(self):
            await asyncio.Event().wait()

    fake = FakeAnthropic(
        Reply([tool_use("t1", "list_dir", {{}})]),
        text("Two files."),
        Reply([{{"type": "text", "text": "a b c d e f g h"}}], chunk=2, gate=Never()),
        text("Still here."),
    )
    os.chdir({workspace!r})
    loop = BackgroundLoop()
    bridge = MainThreadBridge(loop)
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=".")
    report = {{}}

    def chat(prompt):
        events = []
        renderer = TextRenderer(sys.stderr)
        def on_event(event):
            events.append(type(event).__name__)
            renderer.handle(event)
        outcome = bridge.run(forward_events(agent.stream_chat(prompt), bridge), on_event)
        renderer.close(interrupted=outcome.interrupted)
        return outcome, events

    outcome, events = chat("What is here?")
    report["events"] = events

    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    outcome, events = chat("Say the alphabet slowly")
    report["interrupted"] = outcome.interrupted

    async def inside_a_running_loop():
        return chat("Are you there?")

    outcome, events = asyncio.run(inside_a_running_loop())
    report["after"] = events[-1]
    report["requests"] = len(fake.requests)
    report["last_roles"] = [m["role"] for m in fake.requests[-1]["messages"]]
    loop.close()
    print(json.dumps(report))
    """
)


def test_plain_script_chat_interrupt_and_running_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    script = SCRIPT.format(tests=str(TESTS), workspace=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    kinds = [e for i, e in enumerate(report["events"]) if i == 0 or report["events"][i - 1] != e]
    assert kinds == [
        "TurnStarted",
        "TurnFinished",
        "ToolCallStarted",
        "ToolCallFinished",
        "TurnStarted",
        "TextDelta",
        "TurnFinished",
        "AgentFinished",
    ]
    assert report["interrupted"] is True
    assert report["after"] == "AgentFinished"
    assert report["requests"] == 4
    assert report["last_roles"][-1] == "user"
    assert "list_dir() · done" in completed.stderr
    assert "Still here." in completed.stderr


def test_forward_events_closes_the_stream(bridge: MainThreadBridge) -> None:
    closed = threading.Event()

    async def stream() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.sleep(30)
            yield 2
        finally:
            closed.set()

    seen: list[object] = []

    async def work() -> None:
        task = asyncio.ensure_future(forward_events(stream(), bridge))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    bridge.run(work(), seen.append)
    assert seen == [1]
    assert closed.is_set()


def test_a_job_stopped_before_it_started_settles_as_cancelled(bridge: MainThreadBridge) -> None:
    # The stop button can land while ``run`` is still scheduling the job: the cancel then reaches
    # the loop first, and the pump must not wait out the clean-up timeout for a task that never
    # existed (nor leave a coroutine that was never awaited).
    from jupyter_agent.notebook.runtime.bridge import _Job

    ran = []

    async def work() -> str:
        ran.append(True)
        return "done"

    job = _Job(work())
    loop = bridge.background.loop
    loop.call_soon_threadsafe(job.cancel)
    loop.call_soon_threadsafe(job.start)
    settled = job.settled.result(timeout=5)
    assert settled.cancelled
    assert ran == []


def _merge_text(events: list[object]) -> list[object]:
    """``events`` with each run of adjacent ``TextDelta`` joined into one."""
    merged: list[object] = []
    for event in events:
        if type(event) is TextDelta and merged and type(merged[-1]) is TextDelta:
            merged[-1] = TextDelta(merged[-1].text + event.text)
        else:
            merged.append(event)
    return merged


def test_a_fast_stream_reaches_the_main_thread_in_batches_with_the_text_exact(
    bridge: MainThreadBridge,
) -> None:
    tokens = [f"t{i}{' ' if i % 7 else chr(10)}" for i in range(1000)]
    seen: list[object] = []

    async def stream() -> None:
        for k, token in enumerate(tokens):
            bridge.post(TextDelta(token))
            if k % 10 == 9:
                await asyncio.sleep(0.005)  # ~0.5 s of streaming, ~2,000 tokens/s
        bridge.post("end")

    outcome = bridge.run(stream(), seen.append)
    assert not outcome.interrupted
    deltas = [e for e in seen if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == "".join(tokens)
    assert seen[-1] == "end" and len(deltas) == len(seen) - 1
    # Each batch's text reaches the renderer as one event: not one per token. (One wake-up per
    # poll interval at most, nothing but the run's end waking it early: benchmark figure 24.)
    assert len(deltas) <= bridge.batches
    assert len(deltas) < len(tokens) / 10


def test_coalescing_keeps_the_order_around_other_events_and_main_thread_calls(
    bridge: MainThreadBridge,
) -> None:
    posted: list[object] = []
    seen: list[object] = []

    def post(event: object) -> None:
        posted.append(event)
        bridge.post(event)

    async def work() -> None:
        for round_ in range(20):
            for i in range(30):
                post(TextDelta(f"{round_}.{i} "))
                if i % 11 == 10:
                    post(("marker", round_, i))
            value = await bridge.call_on_main(lambda r=round_: seen.append(("call", r)) or r)
            posted.append(("call", value))
            post(TextDelta(""))  # empty text travels too (joined, it changes nothing)
            await asyncio.sleep(0.003)

    bridge.run(work(), seen.append)
    assert _merge_text(seen) == _merge_text(posted)
    assert sum(isinstance(e, TextDelta) for e in seen) < sum(
        isinstance(e, TextDelta) for e in posted
    )


def test_uncoalesced_runs_hand_each_delta_over_as_posted(bridge: MainThreadBridge) -> None:
    posted = [TextDelta(f"w{i} ") for i in range(300)]
    seen: list[object] = []

    async def work() -> None:
        for event in posted:
            bridge.post(event)

    bridge.run(work(), seen.append, coalesce_text=False)
    assert seen == posted


@pytest.mark.timeout(60)
def test_main_thread_calls_and_the_end_of_a_run_wake_the_pump_at_once(
    bridge: MainThreadBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With hour-long poll and idle intervals only the wake-ups can end this run: a pump that
    # slept out its interval while a main-thread call waits, or after the run has ended, would
    # hang it (the test's timeout stops that).
    monkeypatch.setattr(main_bridge, "POLL_INTERVAL_S", 3600.0)
    monkeypatch.setattr(main_bridge, "IDLE_WAKE_S", 3600.0)
    seen: list[object] = []

    async def work() -> int:
        total = 0
        for i in range(5):
            bridge.post(TextDelta(f"{i} "))
            total += await bridge.call_on_main(
                lambda: threading.current_thread().name == "MainThread"
            )
            await asyncio.sleep(0.01)
        return total

    outcome = bridge.run(work(), seen.append)
    assert outcome.value == 5
    assert seen == [TextDelta(f"{i} ") for i in range(5)]


def test_events_other_than_text_wake_the_pump_at_once(
    bridge: MainThreadBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tool call's view must appear when the call starts, not at the next text poll: with
    # hour-long intervals, each event must reach the main thread while the run still waits for
    # it (only its own wake-up can deliver it then).
    monkeypatch.setattr(main_bridge, "POLL_INTERVAL_S", 3600.0)
    monkeypatch.setattr(main_bridge, "IDLE_WAKE_S", 3600.0)
    handled = {name: threading.Event() for name in ("started", "finished")}
    delivered: list[str] = []

    async def work() -> None:
        for name in ("started", "finished"):
            bridge.post(name)
            # 10 s only stops a hung test: the event arrives at once or at the run's end
            arrived = await asyncio.to_thread(handled[name].wait, 10)
            delivered.append(name if arrived else f"{name}: not before the run ended")

    def on_event(event: object) -> None:
        handled[str(event)].set()

    bridge.run(work(), on_event)
    assert delivered == ["started", "finished"]
