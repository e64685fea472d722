"""The tutorials' recorded sessions are current and call tools the way the tools expect.

The cassettes are authored by ``notebooks/cassettes/make_cassettes.py`` from the shipped data, so
the figures the offline answers quote are computed; the first test proves the committed files are
exactly what the script writes today. The second checks every recorded ``tool_use`` against the
real schema of the tool it names, so a change to a tool's arguments shows up here by name rather
than as a puzzling notebook failure (nbval then runs the calls for real).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from jupyter_agent import ToolContext, create_default_registry
from jupyter_agent.notebook.coauthor.cell_tools import (
    DeleteCellTool,
    EditCellTool,
    InsertCellTool,
    NotebookCellsTool,
    RunCellTool,
)
from jupyter_agent.notebook.coauthor.link import NotebookLink
from jupyter_agent.notebook.kernel.history_tool import NotebookHistoryTool
from jupyter_agent.notebook.kernel.kernel_tools import (
    InspectVariableTool,
    ListVariablesTool,
    RunPythonTool,
)
from jupyter_agent.notebook.kernel.propose_cell import CellProposals, ProposeCellTool
from jupyter_agent.notebook.kernel.recorder import CellRecorder
from jupyter_agent.providers.offline import FROM_RESULT, OfflineProvider, load_cassette

CASSETTES = Path(__file__).resolve().parents[1] / "notebooks" / "cassettes"
CASSETTE_FILES = sorted(CASSETTES.glob("*.json"))
#: The custom tool notebook 3 defines (its schema is checked by nbval's output of get_schema()),
#: and the tools of notebook 6's MCP server (their schemas come from the running server).
CUSTOM_TOOLS = {
    "query_shop": {"sql"},
    "units__convert": {"value", "from_unit", "to_unit"},
    "units__choose_units": set(),
}


def test_every_tutorial_has_a_cassette() -> None:
    notebooks = sorted(p.stem for p in CASSETTES.parent.glob("0*.ipynb"))
    assert notebooks, "no tutorial notebooks found"
    assert [p.stem for p in CASSETTE_FILES] == notebooks


def test_make_cassettes_rebuilds_the_committed_cassettes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(CASSETTES / "make_cassettes.py"), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for path in CASSETTE_FILES:
        assert (tmp_path / path.name).read_text() == path.read_text(), path.name


def schemas(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Input schemas of every tool a tutorial's agent has: built-ins (disabled ones too) and the
    kernel tools that look at the session."""
    context = ToolContext(tmp_path)
    registry = create_default_registry(context)
    for tool in (
        ListVariablesTool(context, {}),
        InspectVariableTool(context, {}),
        NotebookHistoryTool(context, CellRecorder(None)),
        ProposeCellTool(context, CellProposals(None)),
    ):
        registry.register(tool)
    # the notebook tools a connected frontend brings (tutorial 07); their schemas need no link
    link, bridge = NotebookLink(None), None
    # run_python, which tutorial 09 enables (and sees refused beside a running cell)
    registry.register(RunPythonTool(context, {}, bridge))  # type: ignore[arg-type]
    for notebook_tool in (
        NotebookCellsTool(context, link, bridge),  # type: ignore[arg-type]
        InsertCellTool(context, link, bridge),  # type: ignore[arg-type]
        EditCellTool(context, link, bridge),  # type: ignore[arg-type]
        RunCellTool(context, link, bridge, lambda: None),  # type: ignore[arg-type]
        DeleteCellTool(context, link, bridge),  # type: ignore[arg-type]
    ):
        registry.register(notebook_tool)
    return {tool.name: tool.get_schema()["input_schema"] for tool in registry.list_tools()}


def stand_ins(value: Any, earlier: set[str]) -> Any:
    """``value`` with each ``$from_result`` (a value the replay takes from this run's result of
    an earlier call of the same exchange, a string) checked and replaced by a string."""
    if isinstance(value, dict) and FROM_RESULT in value:
        assert value[FROM_RESULT] in earlier, f"{value} names no earlier call of its exchange"
        assert re.compile(value["find"]).groups == 1, value
        return "a value of this run"
    if isinstance(value, dict):
        return {key: stand_ins(item, earlier) for key, item in value.items()}
    if isinstance(value, list):
        return [stand_ins(item, earlier) for item in value]
    return value


@pytest.mark.parametrize("path", CASSETTE_FILES, ids=lambda p: p.name)
def test_recorded_tool_calls_match_the_tools_schemas(path: Path, tmp_path: Path) -> None:
    known = schemas(tmp_path)
    exchanges = load_cassette(path)
    assert json.loads(path.read_text())["format"] == "jupyter-agent-cassette"
    ids: set[str] = set()
    for exchange in exchanges:
        earlier: set[str] = set()  # the calls of this exchange so far
        responses = exchange["responses"]
        assert responses[-1]["stop_reason"] == "end_turn", exchange["prompt"]
        for response in responses:
            calls = [b for b in response["content"] if b["type"] == "tool_use"]
            assert response["stop_reason"] == ("tool_use" if calls else "end_turn")
            for block in calls:
                assert block["id"] not in ids, f"duplicate tool_use id {block['id']}"
                ids.add(block["id"])
                name, arguments = block["name"], stand_ins(block["input"], earlier)
                earlier.add(block["id"])
                if name in CUSTOM_TOOLS:
                    assert CUSTOM_TOOLS[name] <= set(arguments)
                    continue
                assert name in known, f"{path.name}: unknown tool {name!r}"
                errors = list(Draft202012Validator(known[name]).iter_errors(arguments))
                assert not errors, f"{path.name}: {name}{arguments}: {errors[0].message}"


def test_offline_provider_loads_each_cassette() -> None:
    for path in CASSETTE_FILES:
        provider = OfflineProvider(path)
        assert provider.exchanges and all(e["prompt"].strip() for e in provider.exchanges)
