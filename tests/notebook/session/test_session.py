"""``NotebookSession`` on its own: no IPython, the model faked at the HTTP boundary.

The session is what the magics front: chats, providers, usage, save/load. These tests drive it
as a script would — and one proves it imports and runs a turn with IPython blocked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_results, tool_use, user_texts

from jupyter_agent.errors import SessionError
from jupyter_agent.events import TextDelta, Usage
from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings
from jupyter_agent.notebook.spend.pricing import UsageLedger
from jupyter_agent.notebook.spend.usage_report import usage_report
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.providers.offline import OFFLINE_NOTICE


def use_fake(session: NotebookSession, *script: Reply) -> FakeAnthropic:
    fake = FakeAnthropic(*script)
    session.use_provider(AnthropicProvider(client=fake.client()))
    return fake


def test_the_session_imports_and_runs_a_turn_without_ipython(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("region,revenue\nnorth,10\nsouth,30\n")
    script = textwrap.dedent(
        f"""
        import sys
        for blocked in ("IPython", "ipywidgets"):
            sys.modules[blocked] = None  # any import of it now raises ImportError
        from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

        session = NotebookSession(SessionSettings(workspace={str(tmp_path)!r}, provider="offline"))
        outcome = session.run("Summarise data.csv")
        session.close()
        leaked = [m for m in sys.modules if m.split(".")[0] in ("IPython", "ipywidgets")
                  and sys.modules[m] is not None]
        assert not leaked, leaked
        print(outcome.answer)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "data.csv" in result.stdout and "revenue" in result.stdout


def test_chats_keep_separate_conversations_and_usage(session: NotebookSession) -> None:
    fake = use_fake(
        session,
        text("Paris.", usage={"input_tokens": 100, "output_tokens": 10}),
        text("4.", usage={"input_tokens": 7, "output_tokens": 1}),
        text("About 2.1 million.", usage={"input_tokens": 120, "output_tokens": 12}),
    )
    session.run("What is the capital of France?")
    session.run("What is 2 + 2?", chat="maths")
    session.run("How many people live there?")
    assert user_texts(fake.requests[1]) == ["What is 2 + 2?"]
    assert user_texts(fake.requests[2]) == [
        "What is the capital of France?",
        "How many people live there?",
    ]
    chats = {chat.name: chat for chat in session.chats()}
    assert list(chats) == ["default", "maths"]
    assert (chats["default"].messages, chats["maths"].messages) == (4, 2)
    assert chats["default"].usage == Usage(220, 22)
    assert chats["maths"].usage == Usage(7, 1)


def test_chats_share_the_tools_and_policies_and_the_context_follows_the_running_chat(
    session: NotebookSession, tmp_path: Path
) -> None:
    fake = use_fake(
        session,
        text("noted"),
        Reply(
            [
                tool_use("t1", "write_file", {"file_path": "x.txt", "content": "x"}),
                tool_use("t2", "save_session_context", {"reason": "checkpoint"}),
            ]
        ),
        text("done"),
    )
    session.run("remember falcon")
    session.registry.set_enabled("web_fetch", False)
    session.set_policy("write_file", "deny")
    session.run("write x.txt and save the session", chat="other")
    assert "web_fetch" not in [tool["name"] for tool in fake.requests[1]["tools"]]
    assert session.chat("other").registry is session.agent.registry
    denied, saved = tool_results(fake.requests[2])
    assert denied["is_error"] is True and not (tmp_path / "x.txt").exists()
    assert not saved.get("is_error")
    transcript = (tmp_path / ".jupyter_agent" / "session.md").read_text()
    assert "write x.txt and save the session" in transcript
    assert "falcon" not in transcript  # the other chat's words stay in the other chat


def test_a_policy_set_before_a_chat_exists_applies_to_it(session: NotebookSession) -> None:
    session.set_policy("read_file", "deny")
    assert session.chat("later").get_policy("read_file") == "deny"


def test_reset_one_chat_or_all(session: NotebookSession) -> None:
    use_fake(session, text("a"), text("b"))
    session.run("first")
    session.run("second", chat="b")
    assert session.reset("b") == ["b"]
    assert [chat.messages for chat in session.chats()] == [2, 0]
    assert session.reset() == ["default", "b"]
    assert [chat.messages for chat in session.chats()] == [0, 0]
    with pytest.raises(SessionError, match="No chat named 'c'; chats: default, b"):
        session.reset("c")


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "../up", "naïve"])
def test_bad_chat_names_are_refused(session: NotebookSession, name: str) -> None:
    with pytest.raises(SessionError, match="A chat name is 1 to 64 letters"):
        session.chat(name)


def test_rebuilding_for_a_new_workspace_keeps_every_chat(
    session: NotebookSession, tmp_path: Path
) -> None:
    fake = use_fake(session, text("one"), text("two"), text("three"))
    session.run("in default")
    session.run("in notes", chat="notes")
    other = tmp_path / "other"
    other.mkdir()
    session.configure(workspace=str(other))
    session.run("again in notes", chat="notes")
    assert session.chat("notes").context.workspace == other.resolve()
    assert user_texts(fake.requests[2]) == ["in notes", "again in notes"]
    assert [chat.messages for chat in session.chats()] == [2, 4]


def test_save_and_load_a_named_chat(session: NotebookSession, tmp_path: Path) -> None:
    fake = use_fake(session, text("Noted: falcon."), text("falcon"))
    session.run("Remember the code word falcon.", chat="secret")
    assert session.save(tmp_path / "chat.json", chat="secret") == 2
    saved = json.loads((tmp_path / "chat.json").read_text())
    assert saved["format"] == "jupyter-agent-session"
    assert session.load(tmp_path / "chat.json", chat="copy") == 2
    session.run("What is the code word?", chat="copy")
    assert user_texts(fake.requests[1])[0] == "Remember the code word falcon."
    with pytest.raises(SessionError, match="No chat named 'nope'"):
        session.save(tmp_path / "x.json", chat="nope")
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(SessionError, match="is not a conversation saved by %agent save"):
        session.load(tmp_path / "bad.json")


def test_a_failed_request_is_a_one_line_session_error(session: NotebookSession) -> None:
    from fake_anthropic import ErrorReply

    fake = FakeAnthropic(ErrorReply(401, "authentication_error", "invalid x-api-key"))
    session.use_provider(AnthropicProvider(client=fake.client()))
    with pytest.raises(SessionError, match=r"The model request failed: .*invalid x-api-key"):
        session.run("hello")
    assert session.agent.messages == []


def test_events_reach_the_caller_and_usage_is_counted_per_model(
    session: NotebookSession,
) -> None:
    use_fake(session, text("Hello there.", usage={"input_tokens": 50, "output_tokens": 5}))
    seen: list[object] = []
    outcome = session.run("hi", on_event=seen.append)
    assert outcome.text == outcome.answer == "Hello there."
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "Hello there."
    [(model, usage)] = session.usage_by_model.items()
    assert model == session.agent.provider.model  # the model the turn reported
    assert usage == Usage(50, 5)


def test_offline_answers_keep_their_labels_in_text_but_not_in_the_answer(
    session: NotebookSession, tmp_path: Path
) -> None:
    (tmp_path / "sales.csv").write_text("region,revenue\nnorth,10\nsouth,30\n")
    session.configure(provider="offline")
    outcome = session.run("Which region has the highest revenue?")
    assert outcome.text is not None and outcome.answer is not None
    assert outcome.text.startswith(OFFLINE_NOTICE)
    assert "offline demo model" in outcome.text.splitlines()[-1]  # the footer
    assert "offline" not in outcome.answer.lower()
    assert "south" in outcome.answer
    assert outcome.answer == outcome.answer.strip()


def test_unknown_settings_and_missing_workspaces_are_refused(
    session: NotebookSession, tmp_path: Path
) -> None:
    with pytest.raises(SessionError, match="Unknown setting 'colour'"):
        session.configure(colour="blue")
    session.configure(workspace=str(tmp_path / "missing"))
    with pytest.raises(SessionError, match="is not an existing folder"):
        session.run("hello")


def test_the_usage_legend_explains_exactly_the_columns_shown() -> None:
    ledger = UsageLedger()
    ledger.add("claude-sonnet-4-5", Usage(1000, 200, 30, 40))
    table = usage_report(ledger, {})
    header, row, *legend = table.splitlines()
    assert header.split() == ["model", "input", "output", "cache", "r/w", "cost"]
    assert row.split() == [
        "claude-sonnet-4-5",
        "1000",
        "200",
        "40/30",
        "$0.00612",
    ]  # 3000 + 3000 + 30 × 3.75 + 40 × 0.3
    explained = "\n".join(legend)
    for column in ("input", "output", "cache r/w", "cost"):
        assert f"{column}:" in explained or f"{column}," in explained, column
    assert "platform.claude.com" in explained


def test_an_offline_only_table_says_it_counts_nothing_and_cites_no_price_list() -> None:
    ledger = UsageLedger()
    ledger.add("offline-demo", Usage())
    table = usage_report(ledger, {})
    assert "platform.claude.com" not in table
    assert "offline demo model runs on this machine; it counts no tokens" in table
    assert "cost: US dollars (the offline model is free)" in table


def test_the_settings_defaults_are_the_agents() -> None:
    import inspect

    from jupyter_agent.agent.agent import Agent

    parameters = inspect.signature(Agent).parameters
    defaults = SessionSettings()
    for name in (
        "max_turns",
        "tool_timeout",
        "max_result_chars",
        "context_window",
        "max_parallel_tools",
    ):
        assert getattr(defaults, name) == parameters[name].default, name


def test_a_key_set_after_a_failed_anthropic_turn_is_used_without_a_restart(
    session: NotebookSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``provider="anthropic"`` with no key, then ``os.environ["ANTHROPIC_API_KEY"] = ...``: the
    cached provider kept its keyless client and every turn failed with the SDK's TypeError
    ("Could not resolve authentication method") until a kernel restart."""
    from notebook_fake_server import serve

    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    fake = FakeAnthropic(text("Hello with a key."))
    with serve(fake) as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        session.configure(provider="anthropic")
        with pytest.raises(SessionError, match="No Anthropic credentials"):
            session.run("hello")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        outcome = session.run("hello again")
    assert outcome.answer == "Hello with a key."
    assert fake.requests[0]["messages"][-1]["content"][-1]["text"] == "hello again"
