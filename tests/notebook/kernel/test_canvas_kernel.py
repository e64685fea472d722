"""The notebook as canvas, in a real ipykernel: the saved record, the Stop button, the recorder.

A finished ``%%agent`` cell must hold no widget view (a saved notebook reopened after a kernel
restart, nbconvert's HTML and GitHub would show "Error displaying widget" for each one), only a
static HTML rendering with a ``text/plain`` fallback. The Stop button is clicked the way a
browser clicks it: a ``comm_msg`` to the button's model while the cell runs.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from kernel_frontend import Kernel, run_notebook
from nbclient import NotebookClient

from jupyter_agent.notebook.inert import is_answer

pytestmark = pytest.mark.slow

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_a_saved_agent_cell_keeps_a_static_record_and_no_widget_view(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    (tmp_path / "notes.txt").write_text("Quarterly sales grew 12%.\n")
    fake_api.add(
        Reply(
            [
                {"type": "text", "text": "I'll read the notes."},
                tool_use("toolu_1", "read_file", {"file_path": "notes.txt"}),
                tool_use("toolu_2", "list_dir", {"path": "."}),
            ]
        ),
        Reply([tool_use("toolu_3", "read_file", {"file_path": "missing.txt"})]),
        text("Sales grew **12%** this quarter."),
    )
    nb = run_notebook(
        tmp_path,
        [
            "%load_ext jupyter_agent",
            "%%agent\nSummarise notes.txt",
            "from ipywidgets.widgets.widget import _instances\n"
            "print('open widgets:', len(_instances))",
        ],
    )
    outputs = nb.cells[1].outputs
    assert [o for o in outputs if o.output_type == "error"] == []
    assert [o for o in outputs if WIDGET_VIEW in o.get("data", {})] == []
    html = "".join(o.data.get("text/html", "") for o in outputs if "data" in o)
    plain = "".join(o.data.get("text/plain", "") for o in outputs if "data" in o)
    for record in (html, plain):
        assert "read_file" in record and "list_dir" in record
        assert "Quarterly sales grew 12%." in record  # an excerpt of the result
        assert "missing.txt" in record
    assert "error" in html  # the failed call says so
    assert "2 calls in parallel" in plain
    # the answer is still there as Markdown
    markdown = "".join(o.data["text/plain"] for o in outputs if is_answer(o.get("metadata")))
    assert "Sales grew **12%** this quarter." in markdown
    # the live widgets were closed: nothing of them is left in the kernel (nbclient keeps
    # closed models in the saved state, JupyterLab does not)
    assert "".join(o.get("text", "") for o in nb.cells[2].outputs).strip() == "open widgets: 0"

    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "read_file" in body and "Quarterly sales grew 12%." in body
    assert "Error displaying widget" not in body


class HeldStream:
    """A reply's gate that holds the stream after its first piece until released: the turn
    cannot end by itself, so only the Stop button can end the cell."""

    def __init__(self) -> None:
        self.released = threading.Event()

    async def wait(self) -> None:
        while not self.released.is_set():
            await asyncio.sleep(0.05)


def test_stop_button_ends_a_turn_whose_reply_never_ends(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    held = HeldStream()
    fake_api.add(
        Reply([{"type": "text", "text": "word " * 400}], chunk=5, gate=held),  # type: ignore[arg-type]
        text("Back again."),
    )
    clicked: dict[str, Any] = {"done": False, "button": None}

    def click_stop(message: dict[str, Any]) -> None:
        if message["msg_type"] == "comm_open":
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "Stop":
                clicked["button"] = message["content"]["comm_id"]
        if (
            clicked["button"] is not None
            and not clicked["done"]
            and message["msg_type"] in ("display_data", "update_display_data")
            and is_answer(message["content"].get("metadata"))
        ):
            clicked["done"] = True
            kernel.send_comm(clicked["button"], {"method": "custom", "content": {"event": "click"}})

    try:
        # the reply is held until the test ends: the cell ends only if the click ended it
        # (60 s is the safety timeout of a hung cell, not a measure)
        reply, outputs = kernel.execute("%%agent\nTell me a long story", click_stop, timeout=60)
    finally:
        held.released.set()
    assert clicked["done"], "no Stop button was shown"
    assert reply["status"] == "ok", outputs
    assert not [o for o in outputs if o["type"] == "error"]
    shown = "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    assert "Stopped" in shown

    reply, outputs = kernel.execute("%%agent\nAre you there?")
    assert reply["status"] == "ok", outputs
    markdown = [o["data"]["text/plain"] for o in outputs if is_answer(o.get("metadata"))]
    assert markdown[-1] == "Back again."
    assert len(fake_api.requests) == 2  # the fake API accepted the repaired conversation


def test_notebook_history_sees_earlier_cells_outputs_errors_and_plots(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    fake_api.add(
        Reply([tool_use("toolu_1", "notebook_history", {"last": 5})]),
        text("I saw them."),
    )
    cells = [
        "%load_ext jupyter_agent",
        "print('hello from cell 2')\n6 * 7",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
        "{}['missing_key']",
        "%%agent\nWhat did my cells do?",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    [result] = tool_results(fake_api.requests[1])
    body = result_text(result)
    assert "hello from cell 2" in body
    assert "42" in body
    assert "KeyError" in body and "missing_key" in body
    assert "plt.plot([1, 2, 3])" in body
    assert "What did my cells do?" not in body  # the running %%agent cell is not among them
    assert body.index("hello from cell 2") < body.index("KeyError")  # oldest first
    assert body.count("[image/png image") == 1  # the plot, sent as an image part
    images = [b for b in result["content"] if isinstance(b, dict) and b.get("type") == "image"]
    assert len(images) == 1
    assert images[0]["source"]["media_type"] == "image/png"


def test_proposals_of_a_turn_become_one_new_cell_in_the_kernel_reply(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    fake_api.add(
        Reply(
            [
                tool_use("toolu_1", "propose_cell", {"code": "import math"}),
                tool_use("toolu_2", "propose_cell", {"code": "math.sqrt(2)"}),
            ]
        ),
        text("Two steps, one cell."),
    )
    reply, outputs = kernel.execute("%%agent\nShow me sqrt(2)")
    assert reply["status"] == "ok", outputs
    payloads = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert payloads == [
        {"source": "set_next_input", "text": "import math\n\nmath.sqrt(2)", "replace": False}
    ]


def test_run_python_figures_shown_inline_reach_the_model_and_the_cell(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    fake_api.add(Reply([tool_use("toolu_1", "run_python", {"code": code})]), text("Plotted."))
    reply, outputs = kernel.execute(
        "%agent_tools enable run_python\n%agent_tools policy run_python allow"
    )
    assert reply["status"] == "ok", outputs
    reply, outputs = kernel.execute("%%agent\nPlot it")
    assert reply["status"] == "ok", outputs
    [result] = tool_results(fake_api.requests[1])
    images = [b for b in result["content"] if b.get("type") == "image"]
    assert len(images) == 1 and images[0]["source"]["media_type"] == "image/png"
    # the user sees the plot in the cell too, and its thumbnail in the saved record
    assert any("image/png" in o.get("data", {}) for o in outputs)
    records = [o for o in outputs if "text/html" in o.get("data", {})]
    assert any("data:image/png;base64," in o["data"]["text/html"] for o in records)


def test_a_long_run_python_shows_its_progress_in_the_tool_view_while_it_runs(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """The code prints once, then waits until the test sees, in the turn's tool view (a widget
    message), how long it has run and the last line it printed: only then is it let go (it
    gives up after 10 s)."""
    go = tmp_path / "go"
    code = (
        "import time, pathlib\nprint('loaded 3 of 10', flush=True)\n"
        f"for _ in range(200):\n    if pathlib.Path({str(go)!r}).exists():\n        break\n"
        "    time.sleep(0.05)\nprint('all loaded')"
    )
    fake_api.add(Reply([tool_use("toolu_1", "run_python", {"code": code})]), text("Loaded."))
    kernel.execute("%agent_tools enable run_python\n%agent_tools policy run_python allow")
    seen: list[str] = []

    def watch(message: dict[str, Any]) -> None:
        shown = str(message["content"].get("data", "")) if message["msg_type"] == "comm_msg" else ""
        if "elapsed" in shown and "loaded 3 of 10" in shown and not seen:
            seen.append(shown)
            go.write_text("")  # the view showed it: the code may end

    reply, outputs = kernel.execute("%%agent\nLoad slowly", on_message=watch)
    assert reply["status"] == "ok", outputs
    assert seen, "the tool view never showed the running code's progress"
    assert "all loaded" in result_text(tool_results(fake_api.requests[1])[0])


def test_undo_names_the_agent_cell_by_its_execution_count(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    """IPython 9 counts a cell before running it: the undo step must still bear the number the
    notebook shows next to the %%agent cell, not the next one."""
    fake_api.add(
        Reply([tool_use("toolu_1", "write_file", {"file_path": "a.txt", "content": "new\n"})]),
        text("Written."),
    )
    nb = run_notebook(tmp_path, ["%load_ext jupyter_agent", "%%agent\nWrite a.txt", "%agent undo"])
    agent_cell, undo_cell = nb.cells[1], nb.cells[2]
    said = "".join(o.get("text", "") for o in undo_cell.outputs)
    assert f"'cell {agent_cell.execution_count}'" in said, said
    assert not (tmp_path / "a.txt").exists()


def _as_saved(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A cell's outputs as a frontend keeps them: each update replaces its display in place."""
    kept: list[dict[str, Any]] = []
    for output in outputs:
        display_id = output.get("transient", {}).get("display_id")
        if output["type"] == "update_display_data":
            for index, earlier in enumerate(kept):
                if display_id and earlier.get("transient", {}).get("display_id") == display_id:
                    kept[index] = {**earlier, "data": output["data"]}
            continue
        kept.append(output)
    return kept


def _open_widgets(kernel: Kernel) -> int:
    reply, outputs = kernel.execute(
        "from ipywidgets.widgets.widget import _instances\nprint(len(_instances))"
    )
    assert reply["status"] == "ok", outputs
    return int("".join(o.get("text", "") for o in outputs if o["type"] == "stream"))


def test_answered_approval_prompts_leave_no_widget_behind(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    """Each Approve/Deny prompt kept its ~20 widget models open for the rest of the session, and
    its cell a widget view ("Error displaying widget" once saved and reopened)."""
    reply, outputs = kernel.execute("%agent_tools enable run_bash")
    assert reply["status"] == "ok", outputs
    before = _open_widgets(kernel)
    for cell in range(8):
        button = "Approve" if cell % 2 == 0 else "Deny"
        fake_api.add(
            Reply([tool_use(f"toolu_{cell}", "run_bash", {"command": f"echo {cell}"})]),
            text("Done."),
        )
        clicked = {"sent": False}

        def click(
            message: dict[str, Any], button: str = button, clicked: dict[str, bool] = clicked
        ) -> None:
            if message["msg_type"] != "comm_open" or clicked["sent"]:
                return
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == button:
                clicked["sent"] = True
                kernel.send_comm(
                    message["content"]["comm_id"],
                    {"method": "custom", "content": {"event": "click"}},
                )

        reply, outputs = kernel.execute("%%agent\nRun it", click)
        assert clicked["sent"] and reply["status"] == "ok", outputs
        saved = _as_saved(outputs)
        assert [o for o in saved if WIDGET_VIEW in o.get("data", {})] == []
        verdict = "Approved" if button == "Approve" else "Denied"
        assert any(verdict in str(o.get("data", {}).get("text/plain", "")) for o in saved)
    assert _open_widgets(kernel) == before


def test_a_notebook_run_by_nbclient_saves_no_widget_state(
    tmp_path: Path,
    fake_api: FakeAnthropic,
) -> None:
    """nbconvert --execute, papermill and nbval run notebooks with nobody at a frontend: the
    live views (tool calls, Stop button) could not be clicked, yet nbclient saved every model
    they opened in the notebook's metadata — about 85 models, 70 KB, per %%agent cell, some
    35 times the size of the cell's outputs."""
    cells = 6
    for cell in range(cells):
        fake_api.add(
            Reply(
                [
                    tool_use(f"toolu_{cell}a", "list_dir", {"path": "."}),
                    tool_use(f"toolu_{cell}b", "read_file", {"file_path": "missing.txt"}),
                ]
            ),
            text(f"Answer {cell}."),
        )
    nb = run_notebook(
        tmp_path, ["%load_ext jupyter_agent", *(f"%%agent\nQuestion {n}" for n in range(cells))]
    )
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    assert state.get("state", {}) == {}
    # each cell still holds its record: the answer and the calls, static
    for n, cell in enumerate(nb.cells[1:]):
        assert [o for o in cell.outputs if WIDGET_VIEW in o.get("data", {})] == []
        plain = "".join(str(o.data.get("text/plain", "")) for o in cell.outputs if "data" in o)
        assert "⇉ 2 calls in parallel:" in plain
        assert "list_dir(path='.') · done" in plain
        assert "read_file(file_path='missing.txt') · error" in plain
        assert f"Answer {n}." in plain


def test_the_recorder_keeps_printed_text_of_every_cell_after_load_ext(
    kernel: Kernel,
    fake_api: FakeAnthropic,
) -> None:
    """IPython 9 tees sys.stdout around each cell and puts the write method it found back at the
    end: the recorder's wrapper, installed during the %load_ext cell, was gone after it, and no
    printed text of any later cell reached notebook_history."""
    for cell in range(30):
        reply, outputs = kernel.execute(f"print('printed', {cell} * 1000)")
        assert reply["status"] == "ok", outputs
    fake_api.add(Reply([tool_use("toolu_1", "notebook_history", {"last": 3})]), text("Seen."))
    reply, outputs = kernel.execute("%%agent\nWhat did I print?")
    assert reply["status"] == "ok", outputs
    [result] = tool_results(fake_api.requests[1])
    body = result_text(result)
    for cell in (27, 28, 29):  # each printed line once, although the cells ran 30 times
        assert body.count(f"printed {cell * 1000}") == 1, body
