"""The page as the source of a re-run cell's turn record, in a real kernel with the test as page.

The frontend extension keeps a cell's record in the cell's metadata and answers the kernel's
``turn_record`` operation with it (``labextension/src/turn_record.ts``). Here the test is the
page: it opens the co-author comm and answers ``turn_record`` from the records it holds, by cell
id — or, as a page with an older extension does, refuses the operation it does not know. A cell
run with JupyterLab's ``cellId`` asks the page through ``page_source.page_record_source``, in the
middle of its run (the kernel's main thread busy: the answer is read by the cell's own polling);
before a page is connected, the record comes with the request that runs the cell (JupyterLab and
Notebook 7 send the cell's metadata with it).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kernel_frontend import Kernel as FrontendKernel

pytestmark = pytest.mark.slow

TARGET = "jupyter_agent.notebook"
KEY = "jupyter_agent.turn"
RECORD = {"format": "jupyter-agent-turn", "version": 1, "signature": "not checked here"}


class Page:
    """The page's end of the comm: ``records`` by cell id, as the cells' metadata holds them."""

    def __init__(self, kernel: Kernel, records: dict[str, Any], *, knows_records: bool) -> None:
        self.kernel = kernel
        self.records = records
        self.knows_records = knows_records
        self.comm_id = uuid.uuid4().hex
        self.asked: list[dict[str, Any]] = []

    def open(self) -> None:
        hello = {"type": "hello", "path": "replay.ipynb", "cells": []}
        self.kernel.client.shell_channel.send(
            self.kernel.client.session.msg(
                "comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": hello}
            )
        )

    def handle(self, message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] != "comm_msg" or content.get("comm_id") != self.comm_id:
            return
        op = content["data"]
        if op.get("type") != "op":
            return
        self.asked.append(op)
        if op["op"] == "turn_record" and self.knows_records:
            reply = {"ok": True, "record": self.records.get(op["cell_id"])}
        else:
            reply = {"ok": False, "error": f"unknown operation {op['op']}"}
        data = {"type": "reply", "id": op["id"], **reply, "path": "replay.ipynb", "cells": []}
        self.kernel.client.shell_channel.send(
            self.kernel.client.session.msg("comm_msg", {"comm_id": self.comm_id, "data": data})
        )


class Kernel(FrontendKernel):
    """Cells run as JupyterLab runs them (with their ``cellId``); iopub goes to the page."""

    page: Page | None = None

    def run(self, code: str, cell_id: str | None, metadata: dict[str, Any] | None = None) -> str:
        """Run ``code`` as cell ``cell_id`` whose metadata is ``metadata``; its printed text."""
        sent = {**(metadata or {}), **({"cellId": cell_id} if cell_id else {})}
        message = self.client.session.msg(
            "execute_request",
            {"code": code, "silent": False, "store_history": True, "allow_stdin": True},
            metadata=sent,
        )
        self.client.shell_channel.send(message)
        msg_id = message["header"]["msg_id"]
        printed: list[str] = []
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, printed
            try:
                got = self.client.get_iopub_msg(timeout=0.1)
            except Exception:
                continue
            if self.page is not None:
                self.page.handle(got)
            if got["parent_header"].get("msg_id") != msg_id:
                continue
            if got["msg_type"] == "stream":
                printed.append(got["content"]["text"])
            if got["msg_type"] == "error":
                raise AssertionError("\n".join(got["content"]["traceback"]))
            if got["msg_type"] == "status" and got["content"]["execution_state"] == "idle":
                return "".join(printed)


#: What a cell asks the page for its own record (the id it was run with), printed as JSON.
ASK = (
    "import json\n"
    "from types import SimpleNamespace\n"
    "from jupyter_agent.notebook.replay.page_source import page_record_source\n"
    "source = page_record_source(get_ipython())\n"
    "cell = SimpleNamespace(cell_id=get_ipython().kernel.get_parent()['metadata'].get('cellId'))\n"
    "print(json.dumps(None if source is None else source.record_for(cell)))"
)


@pytest.fixture
def kernel(tmp_path: Path) -> Any:
    kernel = Kernel(tmp_path)
    try:
        assert kernel.run("%load_ext jupyter_agent", None) == ""
        yield kernel
    finally:
        kernel.close()


def connect(kernel: Kernel, page: Page) -> None:
    kernel.page = page
    page.open()
    kernel.run("pass", None)  # the comm_open is handled before the next cell


def test_the_page_answers_the_record_of_the_cell_that_runs(kernel: Kernel) -> None:
    page = Page(kernel, {"cell-a": RECORD}, knows_records=True)
    connect(kernel, page)
    assert json.loads(kernel.run(ASK, "cell-a")) == RECORD
    assert [op["op"] for op in page.asked] == ["turn_record"]
    assert page.asked[0]["cell_id"] == "cell-a"
    # a cell the page holds no record for
    assert json.loads(kernel.run(ASK, "cell-b")) is None


def test_before_the_page_connects_the_record_comes_with_the_request(kernel: Kernel) -> None:
    """JupyterLab sends the cell's metadata with the request that runs it: with the page's comm
    not connected yet (a Run All right after ``%load_ext``), that is where the record is."""
    assert json.loads(kernel.run(ASK, "cell-a", {KEY: RECORD})) == RECORD
    assert json.loads(kernel.run(ASK, "cell-a")) is None  # no page, none sent


def test_no_record_without_a_cell_id_or_an_extension_that_knows_the_operation(
    kernel: Kernel,
) -> None:
    old = Page(kernel, {"cell-a": RECORD}, knows_records=False)
    connect(kernel, old)
    assert json.loads(kernel.run(ASK, "cell-a")) is None  # refused: an older extension
    assert [op["op"] for op in old.asked] == ["turn_record"]
    page = Page(kernel, {"cell-a": RECORD}, knows_records=True)
    connect(kernel, page)
    assert json.loads(kernel.run(ASK, None)) is None  # not run from a page: nothing asked
    assert page.asked == []


#: ``ASK`` from another thread of the kernel, in the running request's context (as a subshell's
#: thread runs a cell beside a busy one).
ASK_BESIDE = (
    "import contextvars, json, threading\n"
    "from types import SimpleNamespace\n"
    "from jupyter_agent.notebook.replay.page_source import page_record_source\n"
    "source = page_record_source(get_ipython())\n"
    "cell = SimpleNamespace(cell_id=get_ipython().kernel.get_parent()['metadata'].get('cellId'))\n"
    "found = []\n"
    "context = contextvars.copy_context()\n"
    "ask = lambda: found.append(source.record_for(cell))\n"
    "beside = threading.Thread(target=lambda: context.run(ask))\n"
    "beside.start(); beside.join()\n"
    "print(json.dumps(found[0]))"
)


def test_beside_a_busy_cell_the_record_comes_with_the_request(kernel: Kernel) -> None:
    """Off the main thread the comm is not the thread's to read: the record the request carries
    is used, and the page is not asked."""
    page = Page(kernel, {"cell-a": {"from": "the comm"}}, knows_records=True)
    connect(kernel, page)
    assert json.loads(kernel.run(ASK_BESIDE, "cell-a", {KEY: RECORD})) == RECORD
    assert page.asked == []
