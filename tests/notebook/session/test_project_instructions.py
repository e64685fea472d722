"""Project instructions: ``AGENTS.md`` (else ``CLAUDE.md``) at the workspace root joins the system
prompt; a big one is cut with a note; the agent's own write to it waits for the user's approval.

The session runs without IPython, the model faked at the HTTP boundary (``fake_anthropic``).
"""

from __future__ import annotations

from pathlib import Path

from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use

from jupyter_agent.notebook.session.session import NotebookSession
from jupyter_agent.providers.anthropic import AnthropicProvider
from jupyter_agent.tools.project_files import MAX_INSTRUCTIONS_CHARS


def _fake(session: NotebookSession, *script: Reply) -> FakeAnthropic:
    fake = FakeAnthropic(*script)
    session.use_provider(AnthropicProvider(client=fake.client()))
    return fake


def _system(request: dict[str, object]) -> str:
    system = request["system"]
    assert isinstance(system, list)
    return "".join(block["text"] for block in system)


def test_agents_md_joins_the_system_prompt_and_config_shows_it(
    session: NotebookSession, tmp_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("Always answer in French.\n")
    (tmp_path / "CLAUDE.md").write_text("Always answer in German.\n")
    fake = _fake(session, text("Bonjour."), text("Salut."))
    session.run("hello")
    system = _system(fake.requests[0])
    assert system.startswith(session.settings.system_prompt)
    assert "Always answer in French." in system and "German" not in system
    assert ("project instructions", "AGENTS.md (25 characters)") in session.describe()
    # the file is read for every turn: an edit counts from the next cell
    (tmp_path / "AGENTS.md").write_text("Always answer in Latin.\n")
    session.run("again")
    # on a model with mid-conversation system messages the cached prefix stays as it was and
    # the new instructions follow as a system message (issue 32)
    second = fake.requests[1]
    assert "French" in _system(second)
    changes = [m for m in second["messages"] if m["role"] == "system"]
    latest = changes[-1]["content"][0]["text"]
    assert "Latin" in latest and "French" not in latest


def test_claude_md_when_there_is_no_agents_md(session: NotebookSession, tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("Use pandas.\n")
    fake = _fake(session, text("OK."))
    session.run("hello")
    assert "Use pandas." in _system(fake.requests[0])


def test_without_instructions_the_system_prompt_is_the_setting(
    session: NotebookSession,
) -> None:
    fake = _fake(session, text("OK."))
    session.run("hello")
    assert _system(fake.requests[0]) == session.settings.system_prompt
    assert ("project instructions", "none (AGENTS.md or CLAUDE.md at the workspace root)") in (
        session.describe()
    )


def test_a_big_instructions_file_is_cut_with_a_note(
    session: NotebookSession, tmp_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("rule\n" * MAX_INSTRUCTIONS_CHARS)
    fake = _fake(session, text("OK."))
    session.run("hello")
    system = _system(fake.requests[0])
    assert len(system) < len(session.settings.system_prompt) + MAX_INSTRUCTIONS_CHARS + 500
    assert f"only its first {MAX_INSTRUCTIONS_CHARS:,} characters" in system
    [row] = [value for key, value in session.describe() if key == "project instructions"]
    assert "cut" in row


def test_the_agents_own_write_to_the_instructions_asks_first(
    session: NotebookSession, tmp_path: Path
) -> None:
    """write_file runs unasked (policy allow), but not on AGENTS.md: the gate asks, and with
    nobody to ask (no approval handler here) the call is refused, the file untouched."""
    (tmp_path / "AGENTS.md").write_text("Mine.\n")
    fake = _fake(
        session,
        Reply(
            [
                tool_use("toolu_1", "write_file", {"file_path": "AGENTS.md", "content": "x"}),
                tool_use("toolu_2", "write_file", {"file_path": "notes.md", "content": "y"}),
                tool_use(
                    "toolu_3",
                    "edit_file",
                    {"file_path": "./AGENTS.md", "old_string": "Mine", "new_string": "Ours"},
                ),
            ]
        ),
        text("Done."),
    )
    session.run("rewrite the instructions")
    results = {r["tool_use_id"]: r for r in tool_results(fake.requests[1])}
    assert results["toolu_1"].get("is_error") and "approval" in result_text(results["toolu_1"])
    assert results["toolu_3"].get("is_error")
    assert not results["toolu_2"].get("is_error")
    assert (tmp_path / "AGENTS.md").read_text() == "Mine.\n"
    assert (tmp_path / "notes.md").read_text() == "y"
