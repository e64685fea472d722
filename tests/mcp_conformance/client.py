"""The MCP conformance suite's client under test: jupyter-agent's own MCP client.

``@modelcontextprotocol/conformance client --command "python client.py"`` starts a test server
per scenario, runs this script with the server's URL as its last argument and the scenario's
name in ``MCP_CONFORMANCE_SCENARIO`` (and, for some, JSON in ``MCP_CONFORMANCE_CONTEXT``), and
then judges what the client did on the wire. The script does what a notebook user's session
does: ``Agent.add_mcp_server(url=...)`` (connect, initialize, list the tools into the registry)
and calls tools through the registry. Where a person would act — open the "Authorize" link,
submit an elicitation form — it stands in for them: it opens the link the way a browser would
(following the redirect to the client's own loopback callback) and submits forms as shown
(their defaults filled in).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile

import httpx

from jupyter_agent import Agent
from jupyter_agent.mcp.client_features import Form, FormAnswer
from jupyter_agent.providers.offline import OfflineProvider

SCENARIO_TOOLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


async def open_like_a_browser(url: str) -> None:
    """What the user's browser does with the "Authorize" link: follow it to the callback."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=20) as client:
        await client.get(url)


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


async def main(url: str, scenario: str) -> int:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory() as workspace:
        agent = Agent(OfflineProvider(), workspace=workspace)
        options: dict[str, object] = {"policy": "allow", "allow_private_network": True}
        hooks = agent.toolbox.mcp.hooks
        hooks.open_authorization = open_like_a_browser
        hooks.ask = submit_as_shown
        if scenario.startswith("auth/"):
            options["oauth"] = oauth_settings(scenario, context)
        try:
            names = await agent.add_mcp_server("conformance", url=url, **options)
            wanted = SCENARIO_TOOLS.get(scenario)
            if wanted is not None:
                calls = [(f"conformance__{wanted[0]}", wanted[1])]
            else:
                calls = [(name, {}) for name in names[:1]]
            for name, arguments in calls:
                result = await agent.registry.call(name, arguments)
                print(f"{name}: {'error: ' if result.is_error else ''}{result.content[:300]}")
        finally:
            await agent.toolbox.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", ""))))
