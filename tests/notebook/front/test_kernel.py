"""The extension in a real ipykernel: a notebook run by nbclient, a stop button, an Approve click.

The kernel is a separate process started from this venv (jupyter_client swaps the kernelspec's
``python`` for this interpreter); it reaches the fake Messages API on a loopback port through
``ANTHROPIC_BASE_URL`` with a fake key. Widget clicks are sent the way a browser sends them: a
``comm_msg`` on the shell channel while the cell is still running.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from kernel_frontend import WIDGET_STATE, WIDGET_VIEW, Kernel
from nbclient import NotebookClient

from jupyter_agent.notebook.inert import is_answer

pytestmark = pytest.mark.slow


def test_notebook_runs_in_a_real_kernel(tmp_path: Path, fake_api: FakeAnthropic) -> None:
    (tmp_path / "notes.txt").write_text("Quarterly sales grew 12%.\n")
    fake_api.add(
        Reply(
            [
                {"type": "text", "text": "I'll read the notes."},
                tool_use("toolu_1", "read_file", {"file_path": "notes.txt"}),
                tool_use("toolu_2", "list_variables", {}),
            ]
        ),
        text("Sales grew **12%** this quarter."),
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_agent\nregion = 'north'"),
        nbformat.v4.new_code_cell("%agent_tools disable web_fetch\n%agent_tools"),
        nbformat.v4.new_code_cell("%%agent --out answer\nSummarise notes.txt"),
        nbformat.v4.new_code_cell("print(answer)"),
        nbformat.v4.new_code_cell("%agent usage"),
    ]
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    saved = tmp_path / "executed.ipynb"
    nbformat.write(nb, saved)
    nb = nbformat.read(saved, as_version=4)

    errors = [o for cell in nb.cells for o in cell.outputs if o.output_type == "error"]
    assert errors == []

    # the model got the tools' results, and the disabled tool was not offered
    assert len(fake_api.requests) == 2
    assert "web_fetch" not in [t["name"] for t in fake_api.requests[0]["tools"]]
    results = {r["tool_use_id"]: result_text(r) for r in tool_results(fake_api.requests[1])}
    assert "Quarterly sales grew 12%." in results["toolu_1"]
    assert "region: str" in results["toolu_2"]

    # nobody watches nbclient's kernel: the panel is its static table, no widget saved
    assert [o for c in nb.cells for o in c.outputs if WIDGET_VIEW in o.get("data", {})] == []
    assert nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}) == {}
    panel_outputs = [o for o in nb.cells[1].outputs if "text/html" in o.get("data", {})]
    assert len(panel_outputs) == 1
    panel_text = panel_outputs[0].data["text/plain"]
    assert [line.split()[:2] for line in panel_text.splitlines()[1:3]] == [
        ["read_file", "yes"],
        ["write_file", "yes"],
    ]
    assert any(line.split()[:2] == ["web_fetch", "no"] for line in panel_text.splitlines())

    agent_outputs = nb.cells[2].outputs
    markdown = [o.data["text/plain"] for o in agent_outputs if is_answer(o.get("metadata"))]
    # one Markdown display per stretch of text, tool calls between them; together the answer
    assert [part.strip() for part in markdown] == [
        "I'll read the notes.",
        "Sales grew **12%** this quarter.",
    ]
    assert "".join(markdown) == "I'll read the notes.\n\nSales grew **12%** this quarter."
    # a finished cell keeps a static record of its calls, no widget view
    assert [o for o in agent_outputs if WIDGET_VIEW in o.get("data", {})] == []
    records = [
        o
        for o in agent_outputs
        if "text/html" in o.get("data", {}) and not is_answer(o.get("metadata"))
    ]
    assert len(records) == 1
    view_text = records[0].data["text/plain"]
    assert view_text.startswith("⇉ 2 calls in parallel:")
    assert "read_file(file_path='notes.txt') · done" in view_text
    assert "Quarterly sales grew 12%." in view_text
    assert "list_variables() · done" in view_text
    assert "read_file(file_path='notes.txt') · done" in records[0].data["text/html"]

    printed = "".join(o.get("text", "") for o in nb.cells[3].outputs)
    assert printed.strip() == "I'll read the notes.\n\nSales grew **12%** this quarter."
    usage = "".join(o.get("text", "") for o in nb.cells[4].outputs)
    assert "input" in usage and "output" in usage


class _SlowGate:
    """``Reply.gate`` that makes the stream trickle: one text piece every 0.3 s."""

    async def wait(self) -> None:
        await asyncio.sleep(0.3)


def _text_of(outputs: list[dict[str, Any]]) -> str:
    return "".join(o.get("text", "") for o in outputs if o["type"] == "stream")


def test_stop_button_ends_the_turn_and_the_next_cell_works(
    kernel: Kernel, fake_api: FakeAnthropic
) -> None:
    fake_api.add(
        Reply([{"type": "text", "text": "word " * 200}], chunk=5, gate=_SlowGate()),  # type: ignore[arg-type]
        text("Back again."),
    )
    interrupted = {"sent": False}

    def interrupt_once_text_shows(message: dict[str, Any]) -> None:
        if (
            not interrupted["sent"]
            and message["msg_type"] in ("display_data", "update_display_data")
            and is_answer(message["content"].get("metadata"))
        ):
            interrupted["sent"] = True
            kernel.manager.interrupt_kernel()

    reply, outputs = kernel.execute("%%agent\nTell me a long story", interrupt_once_text_shows)
    assert interrupted["sent"]
    assert reply["status"] == "ok", outputs  # no KeyboardInterrupt traceback
    assert "Interrupted" in _text_of(outputs)
    assert not [o for o in outputs if o["type"] == "error"]

    reply, outputs = kernel.execute("%%agent\nAre you there?")
    assert reply["status"] == "ok", outputs
    markdown = [o["data"]["text/plain"] for o in outputs if is_answer(o.get("metadata"))]
    assert markdown[-1] == "Back again."
    # the fake API validates the conversation: an unrepaired one would have been refused
    assert len(fake_api.requests) == 2
    last_user = fake_api.requests[1]["messages"][-1]
    assert json.dumps(last_user).count("Are you there?") == 1


def test_stop_ends_a_turn_while_an_approval_prompt_waits(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """Stop used to say "Stopping…" and leave the cell running until Deny or a kernel interrupt:
    the prompt's wait never looked at it. Now Stop answers the prompt "denied" and ends the turn."""
    fake_api.add(
        Reply([tool_use("toolu_1", "run_bash", {"command": "echo ran > proof.txt"})]),
        text("Back again."),
    )
    reply, outputs = kernel.execute("%agent_tools enable run_bash")
    assert reply["status"] == "ok", outputs
    buttons: dict[str, str] = {}
    clicked: list[str] = []

    def stop_while_asked(message: dict[str, Any]) -> None:
        if message["msg_type"] != "comm_open":
            return
        state = message["content"]["data"].get("state", {})
        if state.get("_model_name") == "ButtonModel":
            buttons[state.get("description", "")] = message["content"]["comm_id"]
        if "Approve" in buttons and "Stop" in buttons and not clicked:
            clicked.append("Stop")
            kernel.send_comm(buttons["Stop"], {"method": "custom", "content": {"event": "click"}})

    # the prompt waits for ever unless answered: the cell ends (within the run's safety timeout)
    # only if the Stop click ended it
    reply, outputs = kernel.execute("%%agent\nWrite the proof file", stop_while_asked, timeout=60)
    assert clicked, "no approval prompt with a Stop button was shown"
    assert reply["status"] == "ok", outputs
    assert not (tmp_path / "proof.txt").exists()
    assert "stopped" in _text_of(outputs).lower() or "interrupted" in _text_of(outputs).lower()
    reply, outputs = kernel.execute("print('next cell')")
    assert _text_of(outputs) == "next cell\n"


def test_approve_button_works_while_the_cell_runs(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.add(
        Reply([tool_use("toolu_1", "run_bash", {"command": "echo approved > proof.txt"})]),
        text("Done."),
    )
    reply, outputs = kernel.execute("%agent_tools enable run_bash")
    assert reply["status"] == "ok", outputs
    clicked = {"sent": False}
    queued: list[str] = []

    def click_approve(message: dict[str, Any]) -> None:
        if message["msg_type"] != "comm_open" or clicked["sent"]:
            return
        state = message["content"]["data"].get("state", {})
        if state.get("_model_name") == "ButtonModel" and state.get("description") == "Approve":
            clicked["sent"] = True
            # "Run all": the next cell is already on its way while this one waits
            queued.append(kernel.client.execute("print('queued cell ran')"))
            time.sleep(0.3)
            kernel.send_comm(
                message["content"]["comm_id"],
                {"method": "custom", "content": {"event": "click"}},
            )

    reply, outputs = kernel.execute("%%agent\nWrite the proof file", click_approve)
    assert clicked["sent"]
    assert reply["status"] == "ok", outputs
    assert (tmp_path / "proof.txt").read_text().strip() == "approved"
    [result] = tool_results(fake_api.requests[1])
    assert not result.get("is_error")
    markdown = [o["data"]["text/plain"] for o in outputs if is_answer(o.get("metadata"))]
    assert markdown[-1] == "Done."

    # the cell queued while the approval waited runs afterwards, in order
    reply, outputs = kernel.collect(queued[0])
    assert reply["status"] == "ok"
    assert _text_of(outputs) == "queued cell ran\n"
    reply, outputs = kernel.execute("print('next cell')")
    assert _text_of(outputs) == "next cell\n"


def test_the_tool_panel_turns_into_a_table_when_the_next_cell_runs(kernel: Kernel) -> None:
    """A saved notebook used to keep the panel's widget view: after a kernel restart it read
    "Error displaying widget: model not found". The panel is live while it is the last thing run;
    the next cell replaces its display by the static table, as a finished %%agent cell does."""
    reply, outputs = kernel.execute("%agent_tools")
    assert reply["status"] == "ok", outputs
    [shown] = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    display_id = shown["transient"]["display_id"]

    reply, outputs = kernel.execute("%agent_tools disable web_fetch")
    assert reply["status"] == "ok", outputs
    updates = [
        o
        for o in outputs
        if o["type"] == "update_display_data" and o["transient"]["display_id"] == display_id
    ]
    assert updates, outputs
    final = updates[-1]["data"]
    assert WIDGET_VIEW not in final
    assert "web_fetch" in final["text/html"]
    assert any(line.split()[:2] == ["web_fetch", "no"] for line in final["text/plain"].splitlines())
    # and it stays a table: no later cell brings the widget back
    reply, outputs = kernel.execute("print('later')")
    assert not [o for o in outputs if o["type"] == "update_display_data"]
