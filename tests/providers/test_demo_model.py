"""The offline demo model answers the first questions a visitor types in a data folder.

Issue 15: on Binder a newcomer types their own question first. "Which region has the highest
revenue?" used to get the generic help text, and "Write a summary of sales.csv to report.md"
tried to *read* report.md. Each test runs the real ``Agent`` with the real file tools in a
temporary workspace laid out like the tutorials' (``data/sales.csv``), and checks the figures
against ones computed here with the ``csv`` module.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from jupyter_agent.agent.agent import Agent
from jupyter_agent.events import AgentFinished, ToolCallStarted
from jupyter_agent.providers.offline import OFFLINE_NOTICE, OfflineProvider
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry

REGIONS = ("North", "South", "East", "West")
PRODUCTS = ("Widget", "Gadget", "Doohickey", "Sprocket", "Gizmo")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    rows = [("month", "region", "product", "units", "revenue")]
    for month in ("2024-01", "2024-02", "2024-03"):
        for r, region in enumerate(REGIONS):
            for p, product in enumerate(PRODUCTS):
                units = (r + 1) * 7 + p * 3 + int(month[-1])
                rows.append((month, region, product, str(units), f"{units * (p + 2.5):.2f}"))
    (tmp_path / "data").mkdir()
    with (tmp_path / "data" / "sales.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return tmp_path


def totals(workspace: Path, key: str, measure: str = "revenue") -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    with (workspace / "data" / "sales.csv").open() as handle:
        for row in csv.DictReader(handle):
            sums[row[key]] += float(row[measure])
    return dict(sums)


def shown(value: float) -> str:
    """A figure as the demo model writes it: whole numbers without decimals."""
    return f"{int(value):,}" if value == int(value) else f"{value:,.2f}"


def agent_for(workspace: Path) -> Agent:
    return Agent(
        OfflineProvider(),
        workspace=workspace,
        registry=create_default_registry(ToolContext(workspace)),
    )


Call = tuple[str, dict[str, object]]


async def calls_and_answer(agent: Agent, prompt: str) -> tuple[list[Call], str]:
    calls: list[Call] = []
    answer = ""
    async for event in agent.stream_chat(prompt):
        if isinstance(event, ToolCallStarted):
            calls.append((event.name, dict(event.input)))
        if isinstance(event, AgentFinished):
            answer = event.text
    return calls, answer


async def test_which_region_has_the_highest_revenue(workspace: Path) -> None:
    by_region = totals(workspace, "region")
    best = max(by_region, key=by_region.__getitem__)
    calls, answer = await calls_and_answer(
        agent_for(workspace), "Which region has the highest revenue?"
    )
    assert [name for name, _ in calls] == ["search_files", "read_file"]
    assert f"**{best}** has the highest total `revenue`" in answer
    assert f"{shown(by_region[best])}." in answer


async def test_the_three_worst_products(workspace: Path) -> None:
    by_product = totals(workspace, "product")
    worst = sorted(by_product, key=by_product.__getitem__)[:3]
    _, answer = await calls_and_answer(
        agent_for(workspace), "What are the three worst products by revenue in data/sales.csv?"
    )
    assert "The 3 `product` values with the lowest total `revenue`" in answer
    places = [answer.index(f"**{name}**") for name in worst]
    assert places == sorted(places)
    assert "4. " not in answer.split("lowest total")[1]


async def test_write_a_summary_to_a_named_file(workspace: Path) -> None:
    calls, answer = await calls_and_answer(
        agent_for(workspace), "Write a summary of sales.csv to report.md"
    )
    names = [name for name, _ in calls]
    assert ("read_file", {"file_path": "report.md"}) not in calls
    # sales.csv is not at the top: it is looked for by name, read, then the report written
    assert names == ["read_file", "search_files", "read_file", "write_file"]
    assert calls[2] == ("read_file", {"file_path": "data/sales.csv"})
    report = (workspace / "report.md").read_text()
    assert report.startswith("# Summary")
    assert "60 data rows and 5 columns" in report
    assert "I wrote a short summary of `data/sales.csv` to `report.md`" in answer
    assert "failed" not in answer


async def test_group_totals_and_counts(workspace: Path) -> None:
    by_region = totals(workspace, "region")
    _, answer = await calls_and_answer(agent_for(workspace), "Total revenue by region")
    assert "By `region`:" in answer
    for region, total in by_region.items():
        assert f"| {region} | {shown(total)} |" in answer
    _, answer = await calls_and_answer(agent_for(workspace), "How many rows does the data have?")
    assert "60 data rows" in answer


async def test_finding_files_does_not_read_them(workspace: Path) -> None:
    calls, answer = await calls_and_answer(agent_for(workspace), "Which CSV files are there?")
    assert [name for name, _ in calls] == ["search_files"]
    assert "`data/sales.csv`" in answer


async def test_anything_else_says_plainly_what_needs_a_key(workspace: Path) -> None:
    calls, answer = await calls_and_answer(agent_for(workspace), "Tell me a joke about pandas")
    assert calls == []
    assert answer.startswith(OFFLINE_NOTICE)
    assert "without an API key" in answer
    assert "It cannot answer other questions" in answer
    assert "`ANTHROPIC_API_KEY`" in answer


async def test_a_disabled_write_tool_is_named(workspace: Path) -> None:
    agent = agent_for(workspace)
    agent.disable_tool("write_file")
    calls, answer = await calls_and_answer(agent, "Write a summary of data/sales.csv to out.md")
    assert "`write_file`" in answer and "disabled" in answer
    assert not (workspace / "out.md").exists()
    assert ("write_file", {"file_path": "out.md"}) not in calls


async def test_which_files_and_what_is_in_them(workspace: Path) -> None:
    calls, answer = await calls_and_answer(
        agent_for(workspace), "Which CSV files are here, and what is in them?"
    )
    assert [name for name, _ in calls] == ["search_files", "read_file"]
    assert "60 data rows and 5 columns" in answer
