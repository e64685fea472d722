"""A fresh kernel's first ``%%agent`` request does not wait for jsonschema's optional format
checkers: ``import jsonschema`` imports ``rfc3987_syntax`` (when installed, as every JupyterLab
environment has it through jupyter-events), which builds a Lark grammar at import time, 0.8 s
and more. The registry imports jsonschema with that import deferred to the first ``iri`` check,
and nothing else changes for anyone else's use of jsonschema.

Each case runs in a fresh interpreter: what is measured is what an import leaves in
``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

try:
    import importlib.util

    HAS_RFC3987_SYNTAX = importlib.util.find_spec("rfc3987_syntax") is not None
except ValueError:
    HAS_RFC3987_SYNTAX = False

needs_rfc3987 = pytest.mark.skipif(
    not HAS_RFC3987_SYNTAX, reason="rfc3987_syntax is not installed here"
)


def fresh(code: str) -> object:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_rfc3987
def test_the_registry_and_its_validators_leave_the_format_grammar_unbuilt() -> None:
    loaded = fresh(
        "import sys, json\n"
        "from jupyter_agent.tools.registry import ToolRegistry\n"
        "from jupyter_agent.tools.context import ToolContext\n"
        "from jupyter_agent.tools.factory import create_default_registry\n"
        "import tempfile, pathlib\n"
        "registry = create_default_registry(ToolContext(pathlib.Path(tempfile.mkdtemp())))\n"
        "deferred = ('lark', 'rfc3987_syntax', 'rfc3986_validator', 'rfc3339_validator', 'fqdn',"
        " 'uri_template', 'webcolors')\n"
        "print(json.dumps(sorted(m for m in deferred if m in sys.modules)))\n"
    )
    assert loaded == []


@needs_rfc3987
def test_jsonschema_format_checks_work_as_before_and_the_libraries_are_the_real_ones() -> None:
    code = (
        "import json\n"
        "{first}"
        "import jsonschema\n"
        "checker = jsonschema.FormatChecker()\n"
        "cases = [('http://example.com/ü', 'iri'), ('not an iri at all', 'iri'),\n"
        "         ('http://x/y', 'uri'), ('no uri', 'uri'),\n"
        "         ('2024-01-02T03:04:05Z', 'date-time'),\n"
        "         ('yesterday', 'date-time'), ('example.com', 'hostname'), ('-bad-', 'hostname'),\n"
        "         ('/a/{{b}}', 'uri-template'), ('/a/{{b', 'uri-template')]\n"
        "verdicts = [checker.conforms(value, format) for value, format in cases]\n"
        "import rfc3987_syntax, rfc3986_validator\n"
        "real = [hasattr(rfc3987_syntax, 'RFC3987_SYNTAX_TERMS'),\n"
        "        hasattr(rfc3986_validator, '__file__')]\n"
        "print(json.dumps([verdicts, real, sorted(checker.checkers)]))\n"
    )
    plain = fresh(code.format(first=""))
    ours = fresh(code.format(first="import jupyter_agent.tools.registry\n"))
    assert ours == plain
    assert ours[1] == [True, True]
    assert ours[0] == [True, False] * 5  # every library answers, right


def test_the_first_agent_cell_without_mcp_servers_leaves_the_mcp_client_unimported() -> None:
    """A session hands its hooks (forms, sampling, the sign-in link) to the toolbox's MCP
    manager when that manager is first made, not by making it at the first ``%%agent`` cell:
    with no server added, ``jupyter_agent.mcp`` (and the ``mcp`` SDK) stay unimported."""
    loaded = fresh(
        "import sys, json, tempfile\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "from IPython.utils.capture import capture_output\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'jupyter_agent')\n"
        "import os; os.chdir(tempfile.mkdtemp())\n"
        "with capture_output() as seen:\n"
        "    shell.run_cell_magic('agent', '--provider offline', 'Say hi')\n"
        "assert 'offline' in seen.stdout, seen.stdout\n"
        "print(json.dumps(sorted(m for m in ('jupyter_agent.mcp', 'mcp') if m in sys.modules)))\n"
    )
    assert loaded == []


def test_the_session_hooks_reach_an_mcp_manager_made_later(tmp_path: Path) -> None:
    from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

    session = NotebookSession(SessionSettings(workspace=str(tmp_path), provider="offline"))
    try:
        toolbox = session.toolbox
        hooks = toolbox.mcp.hooks  # the manager is made now, after the session set up
        assert hooks.ask is not None
        assert hooks.sample is not None
        assert hooks.open_authorization is not None
    finally:
        session.close()


FIRST_CELL = (
    "import sys, json, os, tempfile\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "from IPython.utils.capture import capture_output\n"
    "os.chdir(tempfile.mkdtemp())\n"
    "shell = InteractiveShell.instance()\n"
    "shell.run_line_magic('load_ext', 'jupyter_agent')\n"
    "with capture_output() as seen:\n"
    "    shell.run_cell_magic('agent', '--provider offline', 'Say hi')\n"
    "assert 'offline' in seen.stdout, seen.stdout\n"
)


def test_the_first_agent_cell_leaves_jsonschema_and_httpx_unimported() -> None:
    """httpx (web_fetch's client, not the SDK's httpx2) is imported at web_fetch's first call.
    The package's own tools have their input schemas checked by this suite
    (``test_every_built_in_schema_is_valid_json_schema``), not by the registry at every
    kernel's first ``%%agent`` cell (34 metaschema checks and importing jsonschema: ~0.1 s on
    this machine before the first token); their argument validators are built at their first
    call."""
    loaded = fresh(
        FIRST_CELL
        + "print(json.dumps(sorted(m for m in ('jsonschema', 'httpx') if m in sys.modules)))\n"
    )
    assert loaded == []


def test_every_built_in_schema_is_valid_json_schema() -> None:
    """What the registry no longer checks at registration for the package's own tools: every
    tool of a kernel's session after its first ``%%agent`` cell."""
    checked = fresh(
        FIRST_CELL + "from jsonschema import validators\n"
        "from jupyter_agent.notebook.front.extension import get_magics\n"
        "registry = get_magics(shell).agent.registry\n"
        "names, bad = registry.get_tool_names(), []\n"
        "for name in names:\n"
        "    schema = dict(registry.get_tool(name).get_schema()['input_schema'])\n"
        "    cls = validators.validator_for(schema, default=validators.Draft202012Validator)\n"
        "    bad += [name] if list(cls(cls.META_SCHEMA).iter_errors(schema)) else []\n"
        "print(json.dumps([names, bad]))\n"
    )
    assert isinstance(checked, list)
    names, bad = checked
    assert {"run_python", "inspect_variable", "read_file", "web_fetch"} <= set(names), names
    assert bad == []
