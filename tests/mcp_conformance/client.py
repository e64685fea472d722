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
from typing import Any

import httpx

from jupyter_agent.mcp.client_features import Form, FormAnswer
from jupyter_agent.mcp.config import MCPServerConfig
from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

#: The calls a scenario judges (server tool names and arguments), where it is not the first tool
#: with no arguments; a scenario may also hand them out as ``toolCalls`` in its context.
SCENARIO_CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tools_call": [("add_numbers", {"a": 5, "b": 3})],
    "sse-retry": [("test_reconnection", {})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    # a server that asks for input mid-call (input_required) and is answered, then called again
    "sep-2322-client-request-state": [
        ("test_mrtr_echo_state", {}),
        ("test_mrtr_unrelated", {}),
        ("test_mrtr_no_state", {}),
        ("test_mrtr_no_result_type", {}),
    ],
    # one tool's malformed x-mcp-header must not cost the server its valid tools
    "http-invalid-tool-headers": [("valid_tool", {"region": "us-west1"})],
}
#: Calls whose arguments break the tool's own input schema on purpose (a ``null`` for a boolean,
#: to see the header left out). The registry refuses such arguments before anything is sent (the
#: SPEC's rule for every tool), so these go to the MCP client itself, the layer under test.
BELOW_THE_REGISTRY = {"test_custom_headers_null"}


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


def scenario_calls(
    scenario: str, context: dict[str, Any], session: NotebookSession, names: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The registry calls (our tool names) that play what ``scenario`` checks."""
    if scenario == "json-schema-2020-12-preservation":
        # what the model would be shown as the tool's schema, sent back to the server verbatim
        focal = session.registry.get_tool("conformance__json_schema_2020_12_tool")
        assert focal is not None, names
        schema = focal.get_schema()["input_schema"]
        return [("conformance__json_schema_echo", {"schema": schema})]
    handed_out = context.get("toolCalls")
    if handed_out:
        wanted = [(str(call["name"]), dict(call.get("arguments") or {})) for call in handed_out]
    else:
        wanted = SCENARIO_CALLS.get(scenario, [])
    if wanted:
        return [(f"conformance__{name}", arguments) for name, arguments in wanted]
    return [(name, {}) for name in names[:1]]


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
            outcome = session.bridge.run(mcp.add(config), lambda _event: None)
            names = outcome.value
            calls = scenario_calls(scenario, context, session, names)
            for name, arguments in calls:
                server_tool = name.removeprefix("conformance__")
                if server_tool in BELOW_THE_REGISTRY:
                    raw = session.bridge.run(
                        mcp.servers["conformance"].call_tool(server_tool, arguments, 30.0),
                        lambda _event: None,
                    ).value
                    print(f"{name} (MCP client): {'error' if raw.is_error else 'ok'}")
                    continue
                result = session.bridge.run(
                    session.registry.call(name, arguments), lambda _event: None
                ).value
                print(f"{name}: {'error: ' if result.is_error else ''}{result.content[:300]}")
        finally:
            session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
