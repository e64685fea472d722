"""Figure 20: ``run_cell`` of a trivial cell, end to end, against running it as a plain cell.

A real kernel with the extension loaded; this process plays the notebook frontend (it opens the
extension's comm and answers its operations, as ``labextension/src/operations.ts`` does). *Ours*:
an ``execute_request`` whose code has the co-author run cell ``c1`` (``x = 1 + 1``) as
``run_cell`` does on the kernel's main thread — the ``run_start`` round trip over the comm (the
frontend clears the cell and sends its source), the run, the outputs and execution count placed
by ``run_end`` (sent without a reply) — timed from the request to its reply. *Theirs*: the same
code sent as a plain cell, request to reply, on the same client and kernel (what nbclient does
per cell, without nbclient's own bookkeeping, which only adds to theirs). The hop from the
agent's event loop to the main thread that a ``%%agent`` turn adds is not in either.

The second row is ours again with the frontend's answers sent through a subshell, as JupyterLab 4
sends comm messages (one subshell per comm target): ``request`` waits on the main shell socket in
50 ms polls, so an answer must end the wait at once, not when a poll runs out (it was a
threshold in ``tests/notebook/test_coauthor.py`` before it became this goal).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from ._harness import BenchContext, Row, Stats, compare, limit, require

FIGURE = "20"
CODE = "x = 1 + 1"
_RUN = (
    "from jupyter_agent.notebook.coauthor.link import link_for as _lf\n"
    "from jupyter_agent.notebook.coauthor.cell_run import run_cell_now as _rc\n"
    "_ran = _rc(_lf(get_ipython()), 'c1', None)"
)  # assigned: as an expression its tuple was formatted and displayed as Out[n], which no
# run_cell does (the tool returns it to the model) and which cost ours ~0.3 ms a sample


class _Frontend:
    """Executes cells and answers the co-author's operations on one kernel client."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.comm_id = uuid.uuid4().hex
        #: Answers go with this subshell's id (as JupyterLab 4 sends comm messages), if set.
        self.subshell: str | None = None
        self.cells = {"c1": {"source": CODE, "outputs": [], "count": None}}

    def open(self) -> None:
        cells = [{"id": "c1", "cell_type": "code", "source": CODE, "execution_count": None}]
        message = self.client.session.msg(
            "comm_open",
            {
                "comm_id": self.comm_id,
                "target_name": "jupyter_agent.notebook",
                "data": {"type": "hello", "path": "bench.ipynb", "cells": cells},
            },
        )
        self.client.shell_channel.send(message)

    def _answer(self, message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] != "comm_msg" or content.get("comm_id") != self.comm_id:
            return
        op = content["data"]
        cell = self.cells[op["cell_id"]]
        reply: dict[str, Any] = {"type": "reply", "id": op["id"], "ok": True}
        if op["op"] == "run_start":
            cell["outputs"], cell["count"] = [], None
            reply["source"] = cell["source"]
        elif op["op"] == "run_end":
            cell["outputs"], cell["count"] = op["outputs"], op["execution_count"]
        else:
            return
        if op.get("noreply"):  # run_end: the kernel does not wait for it (the page sends none)
            return
        sent = self.client.session.msg("comm_msg", {"comm_id": self.comm_id, "data": reply})
        if self.subshell is not None:
            sent["header"]["subshell_id"] = self.subshell
        self.client.shell_channel.send(sent)

    def use_a_subshell(self) -> None:
        """Send the answers through a subshell of their own from now on (ipykernel 7)."""
        request = self.client.session.msg("create_subshell_request", {})
        self.client.control_channel.send(request)
        self.subshell = self.client.get_control_msg(timeout=10)["content"]["subshell_id"]

    def execute(self, code: str) -> float:
        """Seconds from the request to its reply, answering comm operations meanwhile."""
        started = time.perf_counter()
        msg_id = self.client.execute(code, store_history=True)
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=5)
            except Exception:
                raise RuntimeError(f"the kernel did not finish {code!r}") from None
            self._answer(message)
            if (
                message["parent_header"].get("msg_id") == msg_id
                and message["msg_type"] == "status"
                and message["content"]["execution_state"] == "idle"
            ):
                break
        while True:
            reply = self.client.get_shell_msg(timeout=5)
            if reply["parent_header"].get("msg_id") == msg_id:
                assert reply["content"]["status"] == "ok", reply["content"]
                return time.perf_counter() - started


def run(ctx: BenchContext) -> list[Row]:
    require("jupyter_agent.notebook.coauthor.cell_run")
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        frontend = _Frontend(client)
        frontend.execute("%load_ext jupyter_agent")
        frontend.open()
        frontend.execute("pass")  # the comm is open once this has run
        for _ in range(3):  # warm both paths
            frontend.execute(_RUN)
            frontend.execute(CODE)
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(ctx.reps(40, 3)):
            ours.append(frontend.execute(_RUN) * 1e3)
            theirs.append(frontend.execute(CODE) * 1e3)
        placed = frontend.cells["c1"]
        assert isinstance(placed["count"], int), placed
        frontend.use_a_subshell()
        frontend.execute(_RUN)
        through_subshell = [frontend.execute(_RUN) * 1e3 for _ in range(ctx.reps(21, 3))]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    ctx.log(f"figure 20: {len(ours)} pairs; the cell was placed as [{placed['count']}]")
    return [
        compare(
            FIGURE,
            "`run_cell` of `x = 1 + 1`, comm to main thread to outputs placed",
            Stats(ours, "ms"),
            Stats(theirs, "ms"),
            "the same cell run as a plain cell (request to reply)",
            max_ratio=1.5,
            note=__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "",
            miss_note=(
                "What ours adds is the run_start round trip (the frontend clears the cell and "
                "sends its current source, unsaved edits included: what makes an edit not yet "
                "announced the code that runs), the run and run_end, sent without a reply. "
                "Timed inside the kernel, run_cell_now takes ~1.0-1.4 ms (kernel CPU ~0.8-1.0 "
                "ms), down from ~1.8-2.3 ms (CPU ~1.4-2.0 ms): the reply is taken from the "
                "poller, no longer through ipykernel's comm dispatch, which fired the shell's "
                "pre/post_execute events (0.4-0.8 ms). The rest of the round trip is "
                "ipykernel's two thread hops (main to IOPub thread, shell-channel thread to "
                "main) and the frontend; the wait itself is a zmq poll that wakes at once. At "
                "load ~1 ours reads 1.43-1.48x (1.50-1.62x before this), narrowly within the "
                "goal; under load both sides swing by more. Only removing the round trip would "
                "meet the goal surely, and that lets an edit still in flight lose to the "
                "kernel's copy; not done."
            ),
        ),
        limit(
            FIGURE,
            "`run_cell` of `x = 1 + 1`, the frontend answering through a subshell (JupyterLab 4)",
            Stats(through_subshell, "ms"),
            None,
            "",
            below=30.0,
            on_median=True,
            note="The wait for the frontend's answer polls the main shell socket every 50 ms; "
            "an answer sent with a subshell id must end it at once, not when a poll runs out.",
            miss_note="The answer through the subshell waits for a poll to run out: the link "
            "no longer claims it from the main thread's socket.",
        ),
    ]
