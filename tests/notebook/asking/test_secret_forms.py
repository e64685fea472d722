"""An MCP server's form that asks for a secret is flagged, masked and kept out of every record.

Issue 33 point 10: a server's form could ask for a ``password`` (the MCP specification says
servers MUST NOT ask for sensitive information in a form: client/elicitation) with no warning, in
a visible text box, the terminal echoed it, and the answer stayed in the static record — and a
server that echoed it in its result handed it to the model and the conversation file. Played
against a real MCP server process (``tests/mcp_servers/secret_form_server.py``) whose form asks
for a ``password`` and an ``api_key`` and echoes them.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import ipywidgets as widgets
import pytest
from ipython_shell import Terminal

from jupyter_agent.mcp.client_features import form_from_schema
from jupyter_agent.notebook.asking.mcp_forms import mcp_form_asker
from jupyter_agent.notebook.asking.user_questions import UserQuestions
from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings
from jupyter_agent.notebook.views.questions import Answer

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parents[2] / "mcp_servers" / "secret_form_server.py"
PASSWORD = "hunter2-Correct-Horse"
API_KEY = "vk-live-5b0e8f1c2d3a"


def test_a_real_servers_secret_fields_are_flagged_masked_and_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = Terminal("ada")  # only the user name is typed where it echoes
    hidden: list[str] = []
    secrets = [PASSWORD, API_KEY]

    def getpass(prompt: str = "") -> str:
        hidden.append(prompt)
        return secrets.pop(0)

    monkeypatch.setattr("sys.stdin", terminal)
    monkeypatch.setattr("builtins.input", terminal.input)
    monkeypatch.setattr("getpass.getpass", getpass)
    session = NotebookSession(SessionSettings(workspace=str(tmp_path), provider="offline"))
    questions = UserQuestions(session.bridge, None, use_widgets=lambda: False)
    try:
        mcp = session.toolbox.mcp
        mcp.hooks.ask = mcp_form_asker(questions)  # the terminal's prompts, as IPython's
        command = [sys.executable, str(SERVER)]
        session.bridge.background.run(mcp.add_server("vault", command=command, policy="allow"))
        registry = session.registry

        async def when_listed() -> None:
            async with asyncio.timeout(30):
                while not registry.has_tool("vault__connect_database"):
                    await asyncio.sleep(0.05)

        session.bridge.background.run(when_listed())
        result = session.bridge.run(
            registry.call("vault__connect_database", {}), lambda _event: None
        ).value
    finally:
        session.close()
    # the user name went through input(); password and key through getpass (no echo)
    assert terminal.questions and len(hidden) == 2, (terminal.questions, hidden)
    shown = capsys.readouterr().out
    asked = [block for block in shown.split("? ")[1:]]
    flagged = [prompt for prompt in asked if "asks for a secret" in prompt]
    assert len(flagged) == 2 and all("MCP specification" in p for p in flagged), shown
    assert "User name" in asked[0] and "asks for a secret" not in asked[0], shown
    assert PASSWORD not in shown and API_KEY not in shown  # never echoed
    # the server got the answers and echoed them: the result the model sees has neither
    assert "Connected as ada" in result.content, result.content
    assert PASSWORD not in result.content and API_KEY not in result.content, result.content
    assert "[redacted: vault password]" in result.content
    assert result.redacted == 2


def test_the_cell_form_masks_a_secret_and_its_answered_line() -> None:
    from jupyter_agent.notebook.asking.mcp_forms import field_question
    from jupyter_agent.notebook.views.widgets.question_form import QuestionForm

    schema = {
        "type": "object",
        "properties": {
            "token": {"type": "string", "title": "Access token"},
            "city": {"type": "string", "title": "City"},
            "maxTokens": {"type": "integer", "title": "Max tokens"},
        },
    }
    form = form_from_schema("vault", "Sign in", schema)
    assert [f.secret for f in form.fields] == [True, False, False]
    secret = QuestionForm(field_question(form, form.fields[0], 0))
    plain = QuestionForm(field_question(form, form.fields[1], 1))
    try:
        assert isinstance(secret.text, widgets.Password)
        assert not isinstance(plain.text, widgets.Password)
        secret.text.value = PASSWORD
        secret.send_button.click()  # as the user sends it
        assert secret.answer == Answer(PASSWORD)
        record = secret.static_bundle()
        assert PASSWORD not in str(record) and "••••" in record["text/plain"], record
        assert "asks for a secret" in record["text/plain"]
    finally:
        secret.close_all()
        plain.close_all()


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("pw", "pw"),
        ("pwd", "Your pwd"),
        ("field1", "GitHub PAT"),
        ("field2", "OpenAI key (sk-...)"),
        ("auth", "Bearer"),
        ("field3", "Session cookie"),
        ("field4", "Wallet seed phrase"),
        ("field5", "Passwort"),
        ("field6", "Mot de passe"),
        ("field7", "6-digit code from your authenticator"),
        ("field8", "p\u0430ssword"),  # a Cyrillic "а"
        ("field9", "ＰＡＳＳＷＯＲＤ"),  # full-width letters
        ("field10", "pass\u200bword"),  # a zero-width space inside
    ],
)
def test_secret_fields_in_other_words_languages_and_spellings_are_flagged(
    name: str, title: str
) -> None:
    """Review F4: abbreviations, token kinds, other languages and look-alike letters all ask for
    a secret; the words are compared after NFKC, case folding and a small confusables map."""
    schema = {"type": "object", "properties": {name: {"type": "string", "title": title}}}
    [field] = form_from_schema("vault", "Sign in", schema).fields
    assert field.secret, (name, title)


@pytest.mark.parametrize(
    "title", ["City", "User name", "Sort key", "Project description", "E-mail", "Compass point"]
)
def test_ordinary_fields_are_not_taken_for_secrets(title: str) -> None:
    schema = {"type": "object", "properties": {"f": {"type": "string", "title": title}}}
    [field] = form_from_schema("vault", "Details", schema).fields
    assert not field.secret, title


def test_a_free_text_answer_is_recorded_as_answered_not_verbatim() -> None:
    """Review F4: what the user types into a server's form goes to the server only; the cell's
    static record (saved with the notebook) says it was answered and how long it was. A choice
    among the server's options is shown as chosen."""
    from jupyter_agent.notebook.asking.mcp_forms import field_question
    from jupyter_agent.notebook.views.widgets.question_form import QuestionForm

    schema = {
        "type": "object",
        "properties": {
            "note": {"type": "string", "title": "Anything else"},
            "size": {"type": "string", "title": "Size", "enum": ["S", "M", "L"]},
        },
    }
    form = form_from_schema("vault", "Details", schema)
    typed = "my recovery words are apple banana"
    free = QuestionForm(field_question(form, form.fields[0], 0))
    chosen = QuestionForm(field_question(form, form.fields[1], 1))
    try:
        free.text.value = typed
        free.send_button.click()
        assert free.answer == Answer(typed)  # what the server gets
        record = free.static_bundle()
        assert typed not in str(record), record
        assert f"answered ({len(typed)} characters" in record["text/plain"], record
        chosen.decide(Answer("M"))
        assert chosen.static_bundle()["text/plain"].endswith("→ M")
    finally:
        free.close_all()
        chosen.close_all()
