"""A reviewer's prints land in order, after the call they are about (issue 15, point 4).

``agent.approval_handler`` runs on the agent's background loop; its ``print`` reached the kernel
at once, while the main thread was still drawing the events before it, so in a saved notebook the
reviewer's lines sat above the tool-call views (tutorial 04 shows it). Here a real kernel runs a
reviewer that prints, through nbclient, and the saved outputs are checked for order.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

REVIEWER = """
from jupyter_agent import Decision
from jupyter_agent.notebook.front.extension import get_magics

async def review(request):
    print(f"reviewer: looked at {request.name}")
    return Decision(approved=False, reason="not today")

agent = get_magics(get_ipython()).agent
agent.approval_handler = review
"""


def test_a_reviewers_print_comes_after_the_call_it_reviews(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    fake_api.add(
        Reply(
            [
                {"type": "text", "text": "Trying it."},
                tool_use("toolu_1", "run_bash", {"command": "ls"}),
            ]
        ),
        Reply(
            [
                {"type": "text", "text": "Second try."},
                tool_use("toolu_2", "run_bash", {"command": "pwd"}),
            ]
        ),
        text("Both were declined."),
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_agent\n%agent_tools enable run_bash"),
        nbformat.v4.new_code_cell(REVIEWER),
        nbformat.v4.new_code_cell("%%agent\nList the files twice"),
    ]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = nb.cells[2].outputs
    assert not [o for o in outputs if o.output_type == "error"]

    def where(needle: str) -> list[int]:
        found = []
        for index, output in enumerate(outputs):
            data = output.get("data", {})
            shown = (
                output.get("text", "") + data.get("text/plain", "") + data.get("text/markdown", "")
            )
            if needle in shown:
                found.append(index)
        return found

    reviews = where("reviewer: looked at run_bash")
    first_call, second_call = (
        where("run_bash(command='ls')")[0],
        where("run_bash(command='pwd')")[0],
    )
    second_text = where("Second try.")[0]
    # each print sits after its own call's view, and the first one before the next turn's text
    assert len(reviews) == 2, [outputs[i] for i in reviews]
    assert reviews[0] > first_call
    assert reviews[0] < second_text
    assert reviews[-1] > second_call
