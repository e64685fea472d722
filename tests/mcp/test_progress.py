"""MCP progress notifications reach the running call's view (SPEC: "MCP as the ecosystem speaks
it"). A real server (``tests/mcp_servers/sdk_server.py``, the SDK's ``MCPServer``) reports
progress from its ``steps`` tool and then waits for a file the test writes only once it has seen
that progress as an event: the notification is shown while the call runs, by event order, not
by the clock.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest

from jupyter_agent.agent.agent import Agent

pytest.importorskip("mcp")

SERVER = str(Path(__file__).parents[1] / "mcp_servers" / "sdk_server.py")


async def test_a_servers_progress_is_an_event_of_the_running_call(tmp_path: Path) -> None:
    from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use

    from jupyter_agent.providers.anthropic import AnthropicProvider

    gate = tmp_path / "gate"
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "srv__steps", {"gate": str(gate)})]),
        text("done"),
    )
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    command = [sys.executable, SERVER, f"--marker={uuid.uuid4().hex}"]
    try:
        await agent.add_mcp_server("srv", command=command, policy="allow")
        kinds: list[str] = []
        progress: list[object] = []
        async for event in agent.stream_chat("take the steps"):
            kinds.append(type(event).__name__)
            if kinds[-1] == "ToolCallProgress":
                progress.append(event)
                gate.write_text("open")  # the tool ends only once its progress was seen
        assert [(p.call_id, p.name, p.progress, p.total, p.message) for p in progress] == [  # type: ignore[attr-defined]
            ("toolu_1", "srv__steps", 1, 2, "halfway")
        ]
        started, finished = kinds.index("ToolCallStarted"), kinds.index("ToolCallFinished")
        assert started < kinds.index("ToolCallProgress") < finished
        [result] = tool_results(fake.requests[1])
        assert result_text(result) == "the gate opened"
    finally:
        await agent.toolbox.mcp.aclose()


async def test_the_running_calls_view_shows_the_servers_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same call drawn by the notebook's renderer: the progress is in the live view's title
    (as the frontend received it) before the call ends, and gone from it once it has."""
    import comm
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from ipywidgets.widgets.tests.utils import setup_test_comm, teardown_test_comm
    from widget_frontend import Frontend

    from jupyter_agent.notebook.views.rich_renderer import RichRenderer
    from jupyter_agent.providers.anthropic import AnthropicProvider

    def titles() -> list[str]:
        return [
            str(frontend.state(model_id)["description"])
            for model_id in frontend.models
            if frontend.state(model_id).get("_model_name") == "ToggleButtonModel"
        ]

    gate = tmp_path / "gate"
    fake = FakeAnthropic(
        Reply([tool_use("toolu_1", "srv__steps", {"gate": str(gate)})]), text("ok")
    )
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    command = [sys.executable, SERVER, f"--marker={uuid.uuid4().hex}"]
    InteractiveShell.instance()
    setup_test_comm()
    frontend = Frontend()
    monkeypatch.setattr(comm, "create_comm", frontend.create_comm)
    seen_while_running: list[str] = []
    try:
        await agent.add_mcp_server("srv", command=command, policy="allow")
        renderer = RichRenderer()
        with capture_output():
            async for event in agent.stream_chat("take the steps"):
                renderer.handle(event)
                if type(event).__name__ == "ToolCallProgress":
                    seen_while_running = titles()
                    gate.write_text("open")
            after = titles()
            renderer.close(interrupted=False)
        [running] = seen_while_running
        assert running.startswith("… srv__steps(gate=")
        assert running.endswith(") · running · 1/2 · halfway")
        [finished] = after
        assert finished.startswith("✓ srv__steps(") and "halfway" not in finished
    finally:
        teardown_test_comm()
        InteractiveShell.clear_instance()
        await agent.toolbox.mcp.aclose()


async def test_a_flood_of_progress_is_coalesced_and_its_latest_still_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that sends thousands of notifications, the last with a megabyte message: the
    round yields the latest progress at most every ``PROGRESS_INTERVAL_S`` and the view's title
    is redrawn at most every render interval (the frontend gets a few dozen messages, not one a
    notification); the message is cut where the event is made; the latest progress still shows
    after a quiet period (the renderer's tick), as it would with no flood at all."""
    import comm
    from fake_anthropic import FakeAnthropic, Reply, text, tool_use
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from ipywidgets.widgets.tests.utils import setup_test_comm, teardown_test_comm
    from widget_frontend import Frontend

    from jupyter_agent.events import ToolCallProgress
    from jupyter_agent.notebook.views.rich_renderer import RichRenderer
    from jupyter_agent.providers.anthropic import AnthropicProvider
    from jupyter_agent.tools.progress import MAX_PROGRESS_MESSAGE_CHARS

    count, size = 5_000, 1_000_000
    gate = tmp_path / "gate"
    fake = FakeAnthropic(
        Reply(
            [tool_use("toolu_1", "srv__steps", {"gate": str(gate), "count": count, "size": size})]
        ),
        text("ok"),
    )
    agent = Agent(AnthropicProvider(client=fake.client()), workspace=tmp_path)
    command = [sys.executable, SERVER, f"--marker={uuid.uuid4().hex}"]
    InteractiveShell.instance()
    setup_test_comm()
    frontend = Frontend()
    monkeypatch.setattr(comm, "create_comm", frontend.create_comm)

    def messages() -> int:
        return sum(len(model.messages) for model in frontend.models.values())

    def title() -> str:
        [button] = [
            model_id
            for model_id in frontend.models
            if frontend.state(model_id).get("_model_name") == "ToggleButtonModel"
        ]
        return str(frontend.state(button)["description"])

    progress: list[ToolCallProgress] = []
    shown = ""
    sent = -1
    try:
        await agent.add_mcp_server("srv", command=command, policy="allow")
        renderer = RichRenderer()
        with capture_output():
            async for event in agent.stream_chat("flood"):
                renderer.handle(event)
                if isinstance(event, ToolCallProgress):
                    progress.append(event)
                    if event.progress == count:  # the last notification: a quiet period follows
                        await asyncio.sleep(renderer.interval_s + 0.05)
                        renderer.tick()
                        shown, sent = title(), messages()
                        gate.write_text("open")
            renderer.close(interrupted=False)
        assert progress and progress[-1].progress == count, "the last progress was dropped"
        # a notification each would be 5,000 events and as many widget messages; the view sends
        # at most one message per progress event, plus the turn's own (the round's rate, at most
        # one event per PROGRESS_INTERVAL_S, is a goal of benchmark figure 24)
        assert len(progress) < count // 20 and sent < count // 20
        assert sent <= 20 + len(progress), (sent, len(progress))
        assert all(len(p.message or "") <= MAX_PROGRESS_MESSAGE_CHARS for p in progress)
        assert shown.startswith("… srv__steps(gate=")
        assert f") · running · {count}/{count} · last éééé" in shown and shown.endswith("é…")
    finally:
        teardown_test_comm()
        InteractiveShell.clear_instance()
        await agent.toolbox.mcp.aclose()
