"""Figure 22: a ``%%agent`` cell answered on a kernel subshell while a CPU-bound cell runs.

(a) The first token of a ``%%agent`` cell sent to a subshell while the main shell runs a
CPU-bound loop, against the same cell on a subshell of an idle kernel: the clock starts when the
``execute_request`` is sent and stops at the first iopub display whose Markdown holds answer
text. (b) The main cell's own run time (measured inside it, ``time.perf_counter``) with one such
answer beside it, against the same cell alone. One kernel, warmed by a first ``%%agent`` cell;
the sides alternate; the model is the zero-latency loopback Messages API.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ._harness import BenchContext, Row, Stats, compare, require, scratch_dir

FIGURE = "22"
MODEL = "bench-t0-c0"

#: CPU-bound until the file ``stop`` appears (row a).
SPIN = """\
import os, time
print("spinning", flush=True)
while not os.path.exists("stop"):
    sum(i * i for i in range(20_000))
os.remove("stop")
"""

#: A fixed amount of CPU-bound work that reports its own run time (row b).
WORK = """\
import time
started = time.perf_counter()
total = 0
for _ in range({rounds}):
    total += sum(i * i for i in range(20_000))
print(f"took {{time.perf_counter() - started:.6f}}", flush=True)
"""


class _Cells:
    """Executions running at once on one kernel: send on the main shell or a subshell, watch."""

    def __init__(self, kernel: Any) -> None:
        self.client = kernel.client
        self.first_answer: dict[str, float] = {}
        self.done: set[str] = set()
        self.text: dict[str, str] = {}

    def subshell(self) -> str:
        self.client.control_channel.send(self.client.session.msg("create_subshell_request", {}))
        return str(self.client.get_control_msg(timeout=10)["content"]["subshell_id"])

    def send(self, code: str, subshell: str | None = None) -> str:
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}}
        message = self.client.session.msg("execute_request", content)
        if subshell is not None:
            message["header"]["subshell_id"] = subshell
        self.client.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    def pump(self, until: Any, timeout: float = 120) -> None:
        from ._kernel import markdown_of

        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() > deadline:
                raise RuntimeError("figure 22: timed out")
            try:
                message = self.client.get_iopub_msg(timeout=0.002)
            except Exception:
                continue
            parent = message["parent_header"].get("msg_id", "")
            kind = message["msg_type"]
            if parent not in self.first_answer and "Done" in markdown_of(message):
                self.first_answer[parent] = time.perf_counter()
            if kind == "stream":
                self.text[parent] = self.text.get(parent, "") + message["content"]["text"]
            if kind == "status" and message["content"]["execution_state"] == "idle":
                self.done.add(parent)


def run(ctx: BenchContext) -> list[Row]:
    require("jupyter_client")
    require("ipykernel")
    from ._kernel import Kernel, kernel_env
    from ._loopback import LoopbackServer

    repetitions = ctx.reps(7, 2)
    rounds = 150 if ctx.quick else 1500
    idle: list[float] = []
    busy: list[float] = []
    alone: list[float] = []
    beside: list[float] = []
    ctx.log(f"figure 22: {repetitions} samples per side, one kernel")
    with (
        LoopbackServer() as server,
        scratch_dir("subshell") as cwd,
        Kernel(cwd, kernel_env(server.base_url, MODEL)) as kernel,
    ):
        kernel.execute("%load_ext jupyter_agent")
        cells = _Cells(kernel)
        sub = cells.subshell()

        def ask() -> float:
            started = time.perf_counter()
            msg = cells.send("%%agent\nSay hi", sub)
            cells.pump(lambda: msg in cells.done)
            if msg not in cells.first_answer:
                raise RuntimeError("the %%agent cell showed no answer text")
            return cells.first_answer[msg] - started

        def ask_while_spinning() -> float:
            main = cells.send(SPIN)
            cells.pump(lambda: "spinning" in cells.text.get(main, ""))
            try:
                return ask()
            finally:
                Path(cwd, "stop").write_text("")
                cells.pump(lambda: main in cells.done)

        def work(with_answer: bool) -> float:
            main = cells.send(WORK.format(rounds=rounds))
            if with_answer:
                msg = cells.send("%%agent\nSay hi", sub)
                cells.pump(lambda: msg in cells.done and main in cells.done)
            else:
                cells.pump(lambda: main in cells.done)
            took = cells.text.get(main, "").split("took ")[-1].strip()
            return float(took)

        ask()  # warm: the first cell builds the session, the provider, the widgets
        for i in range(repetitions):
            order = (False, True) if i % 2 else (True, False)
            for spinning in order:
                (busy if spinning else idle).append(ask_while_spinning() if spinning else ask())
            for with_answer in order:
                (beside if with_answer else alone).append(work(with_answer))
    return [
        compare(
            FIGURE,
            "first token of a `%%agent` cell on a subshell while a CPU-bound cell runs",
            Stats([s * 1e3 for s in busy], "ms"),
            Stats([s * 1e3 for s in idle], "ms"),
            "the same cell on a subshell of an idle kernel",
            max_ratio=1.5,
            note=__doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else "",
            miss_note=(
                "The CPU-bound cell holds the GIL; the answer's own work shares it, one switch "
                "interval (0.1 ms while a main cell runs) each. The running cell pauses while "
                "the answer starts and draws its first words (`front/head_start.py`, at most "
                "30 ms each); what is left is ipykernel's dispatch of the request before the "
                "magic runs, and the IOPub thread's sends after the pause."
            ),
        ),
        compare(
            FIGURE,
            "the CPU-bound main cell's run time with a `%%agent` answer beside it",
            Stats([s * 1e3 for s in beside], "ms"),
            Stats([s * 1e3 for s in alone], "ms"),
            "the same cell alone",
            max_ratio=1.1,
        ),
    ]
