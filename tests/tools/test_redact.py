"""Secrets never reach the model: every tool result passes ``ToolRegistry.call``, which redacts
credential values (the provider's key, credential-named environment variables, well-known token
shapes) before the model, the conversation or the record sees them.

The hostile review found the key coming back from ``notebook_history`` (the common first cell
``os.environ["ANTHROPIC_API_KEY"] = "sk-ant-…"``), from ``inspect_variable`` and from
``read_file(".env")``; each is played here through the real tools.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path

import pytest
from fake_anthropic import Reply, result_text, text, tool_results, tool_use
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from ipython_shell import magics_of, run_ok, use_fake

from jupyter_agent import Image
from jupyter_agent.events import ToolCallFinished
from jupyter_agent.tools.base import ToolResult
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.redact import redact, redactor
from jupyter_agent.tools.registry import ToolRegistry


def _token(alphabet: str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") -> str:
    return "".join(secrets.choice(alphabet) for _ in range(40))


def anthropic_key() -> str:
    return f"sk-ant-api03-{_token()}{_token()}"


def call(registry: ToolRegistry, name: str, args: dict[str, object]) -> ToolResult:
    return asyncio.run(registry.call(name, args))


# -- through the notebook: notebook_history, inspect_variable, read_file ----------------------


def test_the_key_set_in_a_cell_never_reaches_the_model(
    shell: InteractiveShell,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = anthropic_key()
    openai_key = f"sk-proj-{_token()}"
    (tmp_path / ".env").write_text(
        f"OPENAI_API_KEY={openai_key}\nSERVICE_PASSWORD=hunter2-but-longer\nDEBUG=true\n"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "placeholder")  # restored after the test
    run_ok(
        shell,
        f'import os\nos.environ["ANTHROPIC_API_KEY"] = "{key}"\n'
        f'settings_for_agent = {{"api_key": "{key}", "model": "claude"}}\nprint("{key}")',
    )
    fake = use_fake(
        shell,
        Reply(
            [
                tool_use("toolu_1", "notebook_history", {"last": 3}),
                tool_use("toolu_2", "inspect_variable", {"name": "settings_for_agent"}),
                tool_use("toolu_3", "read_file", {"file_path": ".env"}),
                tool_use("toolu_4", "search_text", {"pattern": "KEY"}),
            ]
        ),
        text("Your key is set."),
    )
    try:
        with capture_output() as cell:
            run_ok(shell, "%%agent\nIs my key set?")
        # the cell says so (the terminal rendering of a plain shell)
        assert "secret values were redacted from tool results" in cell.stdout, cell.stdout
        results = {r["tool_use_id"]: result_text(r) for r in tool_results(fake.requests[1])}
        sent = json.dumps(fake.requests)
        assert key not in sent
        assert openai_key not in sent
        assert "hunter2-but-longer" not in sent
        assert "[redacted: ANTHROPIC_API_KEY]" in results["toolu_1"], results["toolu_1"]
        assert "[redacted: ANTHROPIC_API_KEY]" in results["toolu_2"], results["toolu_2"]
        assert "claude" in results["toolu_2"]  # the rest of the value is still there
        assert "OPENAI_API_KEY=[redacted: openai-key]" in results["toolu_3"], results["toolu_3"]
        assert "[redacted: SERVICE_PASSWORD]" in results["toolu_3"]
        assert "DEBUG=true" in results["toolu_3"]
        assert openai_key not in results["toolu_4"] and ".env:1:" in results["toolu_4"]
        # nor the conversation the agent keeps (and saves)
        agent = magics_of(shell).agent
        assert key not in json.dumps(agent.messages, default=str)
    finally:
        shell.user_ns.pop("settings_for_agent", None)


# -- through the registry: the user's own tools, errors, the count -----------------------------


def test_a_user_tool_returning_a_github_token_is_redacted() -> None:
    token = "ghp_" + _token()[:36]

    @tool
    def deploy_status() -> str:
        """Report the deploy status."""
        return f"deployed with token {token}; all good"

    registry = ToolRegistry()
    registry.register(deploy_status)
    result = call(registry, "deploy_status", {})
    assert token not in result.content
    assert result.content == "deployed with token [redacted: github-token]; all good"
    assert result.redacted == 1
    assert not result.is_error


def test_error_results_and_every_part_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "vault-" + _token()
    monkeypatch.setenv("ACME_VAULT_TOKEN", value)

    @tool
    def failing() -> str:
        """Fail loudly."""
        raise RuntimeError(f"could not log in with {value}")

    @tool
    def parts() -> list[str]:
        """Two parts."""
        return ["first " + value, "second " + value]

    registry = ToolRegistry()
    registry.register(failing)
    registry.register(parts)
    failed = call(registry, "failing", {})
    assert failed.is_error and value not in failed.content
    assert "[redacted: ACME_VAULT_TOKEN]" in failed.content
    joined = call(registry, "parts", {})
    assert json.loads(joined.content) == [
        "first [redacted: ACME_VAULT_TOKEN]",
        "second [redacted: ACME_VAULT_TOKEN]",
    ]
    assert joined.redacted == 2


def test_the_count_reaches_the_finished_event() -> None:
    event = ToolCallFinished("toolu_1", "x", "out", False, 0.1, (), redacted=3)
    assert event.redacted == 3
    assert ToolCallFinished("toolu_1", "x", "out", False, 0.1).redacted == 0


def test_read_file_of_dotenv_through_the_default_registry(tmp_path: Path) -> None:
    aws_id = "AKIA" + "ABCDEFGHIJKLMNOP"
    aws_secret = _token("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")
    (tmp_path / ".env").write_text(
        f"aws_access_key_id = {aws_id}\naws_secret_access_key = {aws_secret}\nREGION=eu-west-1\n"
    )
    registry = create_default_registry(ToolContext(tmp_path))
    result = call(registry, "read_file", {"file_path": ".env"})
    assert aws_id not in result.content and aws_secret not in result.content
    assert "[redacted: aws-access-key-id]" in result.content
    assert "[redacted: aws-secret-access-key]" in result.content
    assert "REGION=eu-west-1" in result.content
    assert result.redacted == 2


# -- the redactor itself ------------------------------------------------------------------------

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("secret", "name"),
    [
        ("sk-ant-api03-" + "A1b2C3d4" * 8, "anthropic-key"),
        ("sk-proj-" + "A1b2C3d4" * 6, "openai-key"),
        ("sk-" + "A1b2C3d4" * 6, "openai-key"),
        ("gho_" + "A1b2C3d4" * 5, "github-token"),
        ("github_pat_11ABCDEFG0" + "A1b2C3d4_" * 8, "github-token"),
        ("ASIA" + "ABCDEFGHIJKLMNOP", "aws-access-key-id"),
        ("xoxb-1234567890-1234567890-" + "A1b2C3d4" * 3, "slack-token"),
        ("AIza" + "A1b2C3d4" * 4 + "a_-", "google-api-key"),
        (PEM, "private-key"),
    ],
)
def test_token_shapes(secret: str, name: str) -> None:
    text_in = f"before {secret} after"
    out, count = redact(text_in)
    assert out == f"before [redacted: {name}] after"
    assert count == 1


@pytest.mark.parametrize(
    "harmless",
    [
        "scikit-learn and sk-learn are fine",
        "task-force-alpha-bravo-charlie-delta-echo",
        "the ghp_ prefix alone",
        "AKIA",
        "xoxo-hugs",
        "ASIAN cuisine ABCDEFGHIJKLMNOPQRSTUV",
        "key = value",
        "    KEYWORD_ONLY = 'keyword-only'\n    ERRORTOKEN = token.ERRORTOKEN\n",
        "TOKENIZERS_PARALLELISM=false\nMAX_TOKENS=4096\n",
    ],
)
def test_ordinary_text_is_left_alone(harmless: str) -> None:
    assert redact(harmless) == (harmless, 0)


def test_environment_values_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_DB_PASSWORD", "correct-horse-battery")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("SHORT_SECRET", "1")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.123")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Jane Q. Developer")
    monkeypatch.setenv("DEPLOY_KEY_MODE", "production")
    out, count = redact(
        "pw=correct-horse-battery parallel=false short=1 sock=/tmp/ssh-XXXX/agent.123 "
        "by Jane Q. Developer in production"
    )
    assert out == (
        "pw=[redacted: MY_DB_PASSWORD] parallel=false short=1 sock=/tmp/ssh-XXXX/agent.123 "
        "by Jane Q. Developer in production"
    )
    assert count == 1
    # a change of the environment is seen at the next call
    monkeypatch.setenv("MY_DB_PASSWORD", "another-long-password")
    assert redact("another-long-password")[0] == "[redacted: MY_DB_PASSWORD]"
    assert redact("correct-horse-battery")[0] == "correct-horse-battery"


def test_a_value_cut_in_the_middle_is_redacted_at_both_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A preview (reprlib, a capped result) shows a long value's head and tail: neither leaks."""
    value = "s3cr3t-" + _token() + _token()
    monkeypatch.setenv("VENDOR_TOKEN", value)
    out, count = redact(f"'{value[:30]}...{value[-25:]}' and {value[:10]}")
    assert value[:30] not in out and value[-25:] not in out
    assert out == "'[redacted: VENDOR_TOKEN]...[redacted: VENDOR_TOKEN]' and " + value[:10]
    assert count == 2
    key = anthropic_key()
    assert redact(f"{key[:40]}...{key[-20:]}")[0] == "[redacted: anthropic-key]"


def test_the_longest_value_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTER_TOKEN", "abcdefgh-ijklmnop")
    monkeypatch.setenv("INNER_TOKEN", "abcdefgh")
    assert redact("x abcdefgh-ijklmnop y")[0] == "x [redacted: OUTER_TOKEN] y"


def test_a_large_result_without_secrets_comes_back_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """100 KB without secrets (the common case, every call) is left alone. That it takes well
    under a millisecond is benchmark figure 16's goal (a 100 KB result, < 1 ms every sample)."""
    monkeypatch.setenv("SOME_API_KEY", "value-" + _token())
    big = "".join(
        f"line {i}: sales={i * 3.5:.2f} region=north status=ok key=value\n" for i in range(2000)
    )[:100_000]
    assert redact(big) == (big, 0)
    assert redactor().redact(big) == (big, 0)


def test_text_after_an_image_is_redacted_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "vault-" + _token()
    monkeypatch.setenv("ACME_VAULT_TOKEN", value)
    png = Image(b"\x89PNG\r\n\x1a\n" + b"\0" * 16, "image/png")

    @tool
    def plots() -> list[str | Image]:
        """A plot between two texts."""
        return ["before " + value, png, "after " + value]

    registry = ToolRegistry()
    registry.register(plots)
    result = call(registry, "plots", {})
    assert result.parts == (
        "before [redacted: ACME_VAULT_TOKEN]",
        png,
        "after [redacted: ACME_VAULT_TOKEN]",
    )
    assert (
        result.content == "before [redacted: ACME_VAULT_TOKEN]\nafter [redacted: ACME_VAULT_TOKEN]"
    )
    assert result.images == (png,) and result.redacted == 2
