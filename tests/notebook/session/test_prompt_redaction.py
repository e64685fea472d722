"""Prompts the package builds from the notebook go through the one redactor.

Issue 33 point 11 (SPEC "Secrets never reach the model"): ``%agent error`` sent a failing cell's
source and traceback, and ``{{name}}`` prompt variables their values, without the redactor that
tool results get — a key in a cell or in a variable reached the API. The cells run in a real
IPython shell; the model is faked at the HTTP boundary and shows what was sent.
"""

from __future__ import annotations

import json

import pytest
from fake_anthropic import text, user_texts
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import run_ok, use_fake

GITHUB = "ghp_" + "Q7w2" * 9  # a GitHub token's shape
SERVICE = "s3rv1ce-T0ken-value-9f8e7d"  # a credential-named environment variable's value


def _sent(request: dict[str, object]) -> str:
    return json.dumps(request["messages"])


def test_agent_error_redacts_the_cell_and_its_traceback(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", SERVICE)
    fake = use_fake(shell, text("The service refused the token."))
    failing = (
        "import os\n"
        f"github = '{GITHUB}'\n"
        "raise RuntimeError('refused: ' + os.environ['MY_SERVICE_TOKEN'] + ' ' + github)\n"
    )
    result = shell.run_cell(failing, store_history=True)
    assert isinstance(result.error_in_exec, RuntimeError)
    capsys.readouterr()
    run_ok(shell, "%agent error")
    sent = _sent(fake.requests[0])
    assert GITHUB not in sent and SERVICE not in sent, sent
    assert "[redacted: github-token]" in sent and "[redacted: MY_SERVICE_TOKEN]" in sent
    assert "RuntimeError" in sent  # the rest is there
    out = capsys.readouterr().out
    assert "redacted" in out and "3 secret values" in out, out


def test_prompt_variables_are_redacted(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", SERVICE)
    fake = use_fake(shell, text("It holds two settings."))
    shell.user_ns["settings"] = {"github": GITHUB, "service": SERVICE, "region": "eu-west-1"}
    capsys.readouterr()
    run_ok(shell, "%%agent\nWhat is in {{settings}}?")
    [sent] = user_texts(fake.requests[0])
    assert GITHUB not in sent and SERVICE not in sent, sent
    assert "eu-west-1" in sent and "[redacted: github-token]" in sent
    out = capsys.readouterr().out
    assert "2 secret values" in out and "redacted" in out, out
    shell.user_ns.pop("settings", None)
