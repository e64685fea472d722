"""The MCP conformance suite's client under test: jupyter-agent's own MCP client.

``@modelcontextprotocol/conformance client --command "python client.py"`` starts a test server
per scenario, runs this script with the server's URL as its last argument and the scenario's
name in ``MCP_CONFORMANCE_SCENARIO`` (and, for some, JSON in ``MCP_CONFORMANCE_CONTEXT``), and
then judges what the client did on the wire.

The script is a notebook session without a notebook: a ``NotebookSession`` whose main thread
pumps while the server is added (as ``%agent mcp add`` does), so the OAuth "Authorize" link is
shown through the session's ``show_link`` on the main thread, exactly as in a cell. Where a
person would act it stands in for them: a "browser" thread opens the link (following the
authorization server's redirect to the client's loopback callback), and a server's form is
submitted as shown (its defaults filled in).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading

import httpx

from jupyter_agent.mcp.client_features import Form, FormAnswer
from jupyter_agent.mcp.config import MCPServerConfig
from jupyter_agent.notebook.session import NotebookSession, SessionSettings

SCENARIO_TOOLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def open_like_a_browser(text: str, url: str) -> None:
    """What the user does with the link the cell shows: open it (a browser follows redirects)."""

    def browse() -> None:
        with httpx.Client(follow_redirects=True, timeout=20) as client:
            client.get(url)

    threading.Thread(target=browse, daemon=True).start()


async def submit_as_shown(form: Form) -> FormAnswer:
    """A user who submits a server's form as it is shown: its defaults filled in."""
    return form.initial()


def oauth_settings(scenario: str, context: dict[str, str]) -> dict[str, str]:
    """The server entry's ``"oauth"`` a user would write from what the scenario hands out."""
    settings = {k: str(context[k]) for k in ("client_id", "client_secret") if context.get(k)}
    if scenario.startswith("auth/client-credentials"):
        settings["grant"] = "client_credentials"
        if context.get("private_key_pem"):
            settings["private_key_pem"] = str(context["private_key_pem"])
            settings["signing_algorithm"] = str(context.get("signing_algorithm") or "ES256")
    elif scenario == "auth/basic-cimd":
        settings["client_metadata_url"] = "https://conformance-test.local/client-metadata.json"
    return settings


def main(url: str, scenario: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory() as workspace:
        session = NotebookSession(
            SessionSettings(workspace=workspace, provider="offline"), show_link=open_like_a_browser
        )
        try:
            mcp = session.toolbox.mcp
            mcp.hooks.ask = submit_as_shown
            config = MCPServerConfig(
                name="conformance",
                url=url,
                policy="allow",
                oauth=oauth_settings(scenario, context) if scenario.startswith("auth/") else {},
            )
            # the test servers listen on localhost, which a user's own server may do
            outcome = session.bridge.run(
                mcp.add(config, allow_private_network=True), lambda _event: None
            )
            names = outcome.value
            wanted = SCENARIO_TOOLS.get(scenario)
            if wanted is not None:
                calls = [(f"conformance__{wanted[0]}", wanted[1])]
            else:
                calls = [(name, {}) for name in names[:1]]
            for name, arguments in calls:
                result = session.bridge.run(
                    session.registry.call(name, arguments), lambda _event: None
                ).value
                print(f"{name}: {'error: ' if result.is_error else ''}{result.content[:300]}")
        finally:
            session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
