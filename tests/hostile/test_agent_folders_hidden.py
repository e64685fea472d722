"""The agent's own config and state (MCP OAuth tokens, the signing key) stay hidden from the file
and search tools, wherever environment variables move them — also with the workspace at ``~``.

Issue 33 point 1: with the workspace at the home folder, ``read_file``/``search_text`` returned
``~/.config/jupyter-agent/mcp-oauth/*.json`` whole (access and refresh tokens) and
``write_file`` swapped in an attacker's token. The tokens are written by the MCP client's own
store (``TokenFile``), read back through the public tools of the default registry.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux paths")

pytest.importorskip("mcp")

ACCESS = "ACCESS-TOKEN-MARKER-8c1f"
REFRESH = "REFRESH-TOKEN-MARKER-77aa"

VARIABLES = (
    "JUPYTER_DATA_DIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_RUNTIME_DIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "JUPYTER_PLATFORM_DIRS",
    "JUPYTER_AGENT_CONFIG_DIR",
)


def _store_tokens(url: str) -> Path:
    from mcp.shared.auth import OAuthToken

    from jupyter_agent.mcp.oauth import TokenFile

    store = TokenFile(url)
    token = OAuthToken(access_token=ACCESS, token_type="Bearer", refresh_token=REFRESH)
    asyncio.run(store.set_tokens(token))
    assert store.path.is_file()
    return store.path


def _call(workspace: Path, name: str, args: dict[str, object]) -> tuple[bool, str]:
    registry = create_default_registry(ToolContext(workspace))
    result = asyncio.run(registry.call(name, args))
    return result.is_error, result.content


@pytest.mark.parametrize("where", ["default", "XDG_CONFIG_HOME", "JUPYTER_AGENT_CONFIG_DIR"])
def test_oauth_tokens_are_out_of_the_tools_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    home = (tmp_path / "home").resolve()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if where == "XDG_CONFIG_HOME":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "cfg"))
    elif where == "JUPYTER_AGENT_CONFIG_DIR":
        monkeypatch.setenv("JUPYTER_AGENT_CONFIG_DIR", str(home / "agent-config"))
    token_path = _store_tokens("https://mcp.example.test/mcp")
    shown = str(token_path.relative_to(home))

    error, text = _call(home, "read_file", {"file_path": shown})
    assert error and ACCESS not in text, text
    error, text = _call(home, "search_text", {"pattern": "TOKEN-MARKER"})
    assert ACCESS not in text and REFRESH not in text, text
    error, text = _call(home, "search_files", {"pattern": "**/*.json"})
    assert token_path.name not in text, text
    error, text = _call(home, "list_dir", {"path": str(token_path.parent.relative_to(home))})
    assert error and token_path.name not in text, text
    error, text = _call(home, "write_file", {"file_path": shown, "content": '{"evil": 1}'})
    assert error, text
    assert ACCESS in token_path.read_text()
    error, text = _call(home, "move", {"source": shown, "destination": "stolen.json"})
    assert error and not (home / "stolen.json").exists(), text
    folder = str(token_path.parent.parent.relative_to(home))
    error, text = _call(home, "remove", {"path": folder, "recursive": True})
    assert error and token_path.exists(), text
