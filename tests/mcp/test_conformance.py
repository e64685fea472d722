"""The official MCP conformance suite's client scenarios, run against our MCP client.

``@modelcontextprotocol/conformance`` (pinned in ``npm_packages.py``) starts a test server per
scenario and judges what our client (``mcp_conformance/client.py``: ``Agent.add_mcp_server`` and
registry calls, the user's clicks played by the script) did on the wire.

What is run is what the suite itself says conformance is: its ``requirements/2025-11-25.yaml``
and ``requirements/2026-07-28.yaml`` (the canonical "which scenarios must my implementation pass
to conform to this revision"), each scenario at its revision's wire — the initialize handshake
for 2025-11-25, the stateless protocol with per-request ``_meta`` for 2026-07-28 (the client
negotiates: ``server/discover`` first, the handshake as fallback). Besides those, the two
2025-03-26 scenarios (servers with no protected-resource metadata), the client-credentials
extension and the JSON Schema 2020-12 preservation scenario, which the client supports.
``test_the_run_list_is_the_suites_own`` fails when the installed suite's lists differ from
these, and says which scenario nobody decided about.

Before 0.2.0-alpha.6 the suite's ``auth/2025-03-26-oauth-metadata-backcompat`` mock served
metadata whose ``issuer`` broke RFC 8414 §3.3 (``<origin>/oauth`` at the root well-known path),
which the SDK rightly refuses; the suite fixed its mock (upstream #359), hence the pin.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from npm_packages import CONFORMANCE, node_22, npm_package

pytestmark = pytest.mark.slow

CLIENT = Path(__file__).parents[1] / "mcp_conformance" / "client.py"

#: The client scenarios each revision requires, as the suite's requirement files list them.
REQUIRED: dict[str, list[str]] = {
    "2025-11-25": [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/pre-registration",
    ],
    "2026-07-28": [
        "tools_call",
        "request-metadata",
        "auth/metadata-default",
        "auth/metadata-var1",
        "auth/metadata-var2",
        "auth/metadata-var3",
        "auth/basic-cimd",
        "auth/scope-from-www-authenticate",
        "auth/scope-from-scopes-supported",
        "auth/scope-omitted-when-undefined",
        "auth/scope-step-up",
        "auth/scope-retry-limit",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
        "auth/pre-registration",
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
    ],
}
#: Scenarios outside the requirement files that the client supports, run at the suite's default.
ALSO_RUN = [
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "json-schema-2020-12-preservation",  # not scored yet (added after the 2026-07-28 release)
]
#: The suite's other client scenarios, and why they are not run.
NOT_RUN = {
    "auth/enterprise-managed-authorization": "extension (not scored): not supported",
    "auth/dpop": "extension (not scored): not supported",
    "auth/dpop-nonce": "extension (not scored): not supported",
    "auth/wif-jwt-bearer": "extension (not scored): not supported",
    "sep-2640-client-no-prefetch": "extension (not scored): skills, not supported",
    "sep-2640-client-verify-digest": "extension (not scored): skills, not supported",
    "sep-2640-client-verify-size": "extension (not scored): skills, not supported",
    "sep-2640-client-verify-frontmatter": "extension (not scored): skills, not supported",
}
RUNS = [(revision, name) for revision, names in REQUIRED.items() for name in names] + [
    ("default", name) for name in ALSO_RUN
]


@pytest.fixture(scope="module")
def conformance() -> list[str]:
    return [str(node_22()), str(npm_package(CONFORMANCE) / "dist" / "index.js")]


@pytest.mark.parametrize(("revision", "scenario"), RUNS, ids=[f"{r}/{n}" for r, n in RUNS])
def test_conformance_client_scenario(
    conformance: list[str], revision: str, scenario: str, tmp_path: Path
) -> None:
    env = dict(os.environ)
    env["JUPYTER_AGENT_CONFIG_DIR"] = str(tmp_path / "config")  # tokens of this run only
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    at_revision = [] if revision == "default" else ["--spec-version", revision]
    result = subprocess.run(
        [
            *conformance,
            "client",
            "--command",
            f"{sys.executable} {CLIENT}",
            "--scenario",
            scenario,
            *at_revision,
            "--timeout",
            "60000",
            "--output-dir",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=tmp_path,
    )
    output = result.stdout + result.stderr
    summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", output)
    assert result.returncode == 0 and summary is not None and summary[3] == "0", output[-4000:]
    assert int(summary[1]) > 0, f"no check ran: {output[-2000:]}"


def test_the_run_list_is_the_suites_own(conformance: list[str]) -> None:
    """The lists above are the installed suite's: its requirement files, and a decision (run, or
    not run with a reason) for every other client scenario it lists."""
    package = Path(conformance[1]).parents[1]
    for revision, names in REQUIRED.items():
        requirements = yaml.safe_load((package / "requirements" / f"{revision}.yaml").read_text())
        assert names == requirements["client"], revision
    listed = subprocess.run(
        [*conformance, "list", "--client"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    every = set(re.findall(r"^\s+- (\S+)", listed, flags=re.MULTILINE))
    decided = {name for _revision, name in RUNS} | set(NOT_RUN)
    assert every - decided == set(), "scenarios nobody decided about"
    assert decided - every == set(), "scenarios the suite no longer has"
