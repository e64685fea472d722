"""A ``%%agent`` cell sent to a kernel subshell while the main shell runs a cell (issue 37).

ipykernel 7 runs an ``execute_request`` that carries a ``subshell_id`` on the subshell's own
thread, at once, beside the main shell. The test plays a frontend that speaks subshells: a main
cell prints progress in a ``time.sleep`` loop until the test lets it end; meanwhile a ``%%agent``
cell goes to a subshell. Its answer must arrive while the main cell still runs, with read-only
tools only (``run_python`` refused with a result saying the main cell is still running), the
running cell's output so far in ``notebook_history``, a one-line note, and the main cell must
finish unharmed. An interrupt of the main cell must not end the answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from kernel_frontend import Cells, Kernel, create_subshell, send_execute

pytestmark = pytest.mark.slow

#: The main cell: progress until the file ``done`` appears (or 60 s pass), then a last line.
MAIN_CELL = """\
import os, time
progress = 0
for step in range(1200):
    if os.path.exists("done"):
        break
    progress = step
    print(f"step {step}", flush=True)
    time.sleep(0.05)
print("main finished", flush=True)
"""


def _tool_results(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for message in request["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    found[block["tool_use_id"]] = block
    return found


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def test_an_agent_cell_on_a_subshell_answers_while_the_main_cell_runs(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.add(
        Reply(
            [
                tool_use("c1", "run_python", {"code": "hijacked = 1"}),
                tool_use("c2", "list_variables", {}),
                tool_use("c3", "notebook_history", {"last": 2}),
            ]
        ),
        text("The loop is at step 4 or later and going well."),
    )
    enabled = kernel.execute("%agent_tools enable run_python\n%agent_tools policy run_python allow")
    assert enabled[0]["status"] == "ok", enabled[1]
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 3" in cells.text(main))
    beside = send_execute(kernel, "%%agent\nHow is the loop doing?", subshell)
    cells.pump(lambda: beside in cells.replies, timeout=60)
    assert main not in cells.replies, "the main cell ended before the answer came"
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies)

    assert cells.replies[beside]["status"] == "ok", cells.text(beside)
    answer = cells.text(beside)
    assert "going well" in answer
    assert "ran beside a running cell" in answer
    results = _tool_results(fake_api.requests[1])
    refused = _result_text(results["c1"])
    assert results["c1"].get("is_error") is True, refused
    assert "main cell is still running" in refused
    assert "progress" in _result_text(results["c2"])
    assert "step 3" in _result_text(results["c3"]), _result_text(results["c3"])

    assert cells.replies[main]["status"] == "ok", cells.text(main)
    assert "main finished" in cells.text(main)
    printed = [int(word) for word in re.findall(r"step (\d+)\n", cells.text(main))]
    assert printed == list(range(len(printed))), "some of the main cell's prints went elsewhere"
    check = kernel.execute("print('hijacked' in globals(), progress > 3)")
    assert check[0]["status"] == "ok"
    assert "False True" in "".join(o.get("text", "") for o in check[1]), check[1]


def test_an_interrupt_of_the_main_cell_does_not_end_the_answer(
    kernel: Kernel, fake_api: FakeAnthropic
) -> None:
    class SlowGate:
        async def wait(self) -> None:
            await asyncio.sleep(0.02)

    story = " ".join(f"w{index}" for index in range(200))
    fake_api.add(Reply([{"type": "text", "text": story}], chunk=8, gate=SlowGate()))  # type: ignore[arg-type]
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 1" in cells.text(main))
    beside = send_execute(kernel, "%%agent\nTell me a long story", subshell)
    cells.pump(lambda: "w10" in json.dumps(cells.outputs.get(beside, [])))
    kernel.manager.interrupt_kernel()
    cells.pump(lambda: main in cells.replies and beside in cells.replies)

    assert cells.replies[main]["status"] == "error"
    assert cells.replies[main]["ename"] == "KeyboardInterrupt"
    assert cells.replies[beside]["status"] == "ok", cells.text(beside)
    answer = cells.text(beside)
    assert "w199" in answer, answer
    assert "Interrupted" not in answer


def test_stop_ends_the_answer_and_leaves_the_running_cell(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    class SlowGate:
        async def wait(self) -> None:
            await asyncio.sleep(0.05)

    story = " ".join(f"w{index}" for index in range(400))
    fake_api.add(Reply([{"type": "text", "text": story}], chunk=8, gate=SlowGate()))  # type: ignore[arg-type]
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    widgets = create_subshell(kernel)  # JupyterLab 4 sends widget messages to a subshell of its own
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 1" in cells.text(main))
    beside = send_execute(kernel, "%%agent\nTell me a long story", subshell)
    cells.pump(lambda: beside in cells.stop_buttons.values() and "w5" in json.dumps(cells.outputs))
    button = next(comm for comm, parent in cells.stop_buttons.items() if parent == beside)
    click = kernel.client.session.msg(
        "comm_msg", {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
    )
    click["header"]["subshell_id"] = widgets
    kernel.client.shell_channel.send(click)
    cells.pump(lambda: beside in cells.replies, timeout=30)
    assert main not in cells.replies, "Stop ended the running cell"
    assert "w399" not in cells.text(beside)
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies)
    assert cells.replies[main]["status"] == "ok", cells.text(main)
    assert "main finished" in cells.text(main)


def test_agent_ask_from_a_line_answers_beside_the_running_cell(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.add(
        Reply([tool_use("c1", "write_file", {"file_path": "x.txt", "content": "no"})]),
        text("Still looping."),
    )
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 1" in cells.text(main))
    beside = send_execute(kernel, '%agent ask "how is the loop doing?"', subshell)
    cells.pump(lambda: beside in cells.replies, timeout=60)
    assert main not in cells.replies, "the main cell ended before the answer came"
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies)

    assert cells.replies[beside]["status"] == "ok", cells.text(beside)
    assert "Still looping." in cells.text(beside)
    assert "ran beside a running cell" in cells.text(beside)
    assert "how is the loop doing?" in json.dumps(fake_api.requests[0]["messages"][-1])
    refused = _result_text(_tool_results(fake_api.requests[1])["c1"])
    assert "main cell is still running" in refused
    assert not (tmp_path / "x.txt").exists()
    assert cells.replies[main]["status"] == "ok", cells.text(main)


def test_the_session_budget_holds_beside_a_running_cell(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.add(text("This reply costs money."))
    capped = kernel.execute("%config AgentMagics.session_budget = 0.0")
    assert capped[0]["status"] == "ok", capped[1]
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 1" in cells.text(main))
    beside = send_execute(kernel, "%%agent\nHow is the loop doing?", subshell)
    cells.pump(lambda: beside in cells.replies, timeout=60)
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies)

    assert "session budget" in cells.text(beside), cells.text(beside)
    assert fake_api.requests == [], "a request over the session budget was sent"
    assert cells.replies[main]["status"] == "ok", cells.text(main)


def test_an_answer_beside_a_running_agent_turn_stays_in_its_own_cell(
    kernel: Kernel, fake_api: FakeAnthropic
) -> None:
    class SlowGate:
        async def wait(self) -> None:
            await asyncio.sleep(0.02)

    story = " ".join(f"w{index}" for index in range(300))
    fake_api.add(
        Reply([{"type": "text", "text": story}], chunk=8, gate=SlowGate()),  # type: ignore[arg-type]
        text("Beside answer."),
    )
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, "%%agent\nTell me a long story", None)
    cells.pump(lambda: "w5" in json.dumps(cells.outputs.get(main, [])))
    beside = send_execute(kernel, "%%agent\nA quick question", subshell)
    cells.pump(lambda: beside in cells.replies, timeout=60)
    assert main not in cells.replies, "the main turn ended before the answer came"
    cells.pump(lambda: main in cells.replies)

    assert cells.replies[beside]["status"] == "ok", cells.text(beside)
    assert "ran beside a running cell" in cells.text(beside)
    assert "Beside answer." in cells.text(beside)
    assert "ran beside" not in cells.text(main), "the note went to the running turn's cell"
    assert cells.replies[main]["status"] == "ok", cells.text(main)
    assert "w299" in cells.text(main)


def test_cell_options_beside_a_running_cell(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.add(text("Forty-two."))
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 1" in cells.text(main))
    # --new and --plan would change the chat the running cell may use: refused in one line
    refused = send_execute(kernel, "%%agent --new\nA question", subshell)
    cells.pump(lambda: refused in cells.replies, timeout=60)
    # --out keeps the answer, --max-turns bounds the turn
    kept = send_execute(kernel, "%%agent --out beside_answer --max-turns 1\nA question", subshell)
    cells.pump(lambda: kept in cells.replies, timeout=60)
    assert main not in cells.replies
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies)

    assert cells.replies[refused]["status"] == "error"
    assert cells.replies[refused]["ename"] == "UsageError"
    assert "beside a running cell" in cells.replies[refused]["evalue"]
    assert cells.replies[kept]["status"] == "ok", cells.text(kept)
    assert len(fake_api.requests) == 1
    check = kernel.execute("print(beside_answer)")
    assert "Forty-two." in "".join(o.get("text", "") for o in check[1]), check[1]


#: A CPU-bound main cell: a pure-Python loop that holds the GIL (no sleep, no print) until the
#: file ``done`` appears; it notes the interpreter's thread switch interval it ran under.
SPIN_CELL = """\
import os, sys
spun_under = sys.getswitchinterval()
print("spinning", flush=True)
while not os.path.exists("done"):
    sum(i * i for i in range(20_000))
print("spin finished", flush=True)
"""


def test_an_answer_beside_a_cpu_bound_cell_gets_quick_hand_offs_from_its_start(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """Figure 22 (a): beside a pure-Python loop, every hop of the answer between the kernel's
    threads (the shell channel's, the subshell's, the IOPub thread, the agent's loop) waits for
    the loop to give up the GIL, which it does once per switch interval. The hops before the
    magic runs (ipykernel's own dispatch of the request on the subshell) came at the default
    5 ms, so the interval must be short for the whole main cell, not from the answer on."""
    from jupyter_agent.notebook.runtime.subshell import BESIDE_SWITCH_INTERVAL_S

    fake_api.add(text("Still spinning."))
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    # read on the subshell, where no main-shell cell runs
    default = send_execute(kernel, "import sys; print(sys.getswitchinterval())", subshell)
    cells.pump(lambda: default in cells.idle)  # its output came before its idle
    main = send_execute(kernel, SPIN_CELL, None)
    cells.pump(lambda: "spinning" in cells.text(main))
    beside = send_execute(kernel, "%%agent\nHow is the loop doing?", subshell)
    cells.pump(lambda: "Still spinning." in cells.text(beside), timeout=60)
    assert main not in cells.replies, "the main cell ended before the answer came"
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies and beside in cells.replies)

    assert cells.replies[main]["status"] == "ok", cells.text(main)
    assert cells.replies[beside]["status"] == "ok", cells.text(beside)
    after = send_execute(kernel, "print(spun_under, sys.getswitchinterval())", subshell)
    cells.pump(lambda: after in cells.idle)  # its output came before its idle
    spun_under, restored = cells.text(after).split()
    assert float(spun_under) <= BESIDE_SWITCH_INTERVAL_S, "the main cell ran at the default"
    assert float(cells.text(default)) > BESIDE_SWITCH_INTERVAL_S
    assert restored == cells.text(default).strip(), "the interval was not put back"
    # an interval the user's own cell sets is the user's: kept after that cell
    own = send_execute(kernel, "sys.setswitchinterval(0.02)", None)
    cells.pump(lambda: own in cells.replies)
    kept = send_execute(kernel, "print(sys.getswitchinterval())", subshell)
    cells.pump(lambda: kept in cells.idle)  # its output came before its idle
    assert float(cells.text(kept)) == 0.02


def test_a_denied_or_asking_tool_stays_so_beside_a_running_cell(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """``deny`` always wins, and ``ask`` cannot be answered beside a running cell: the read-only
    tools follow the user's policies there too (the beside turn had a gate of its own, empty)."""
    fake_api.add(
        Reply(
            [
                tool_use("c1", "inspect_variable", {"name": "secret"}),
                tool_use("c2", "list_variables", {}),
                tool_use("c3", "notebook_history", {"last": 1}),
            ]
        ),
        text("Done."),
    )
    set_up = kernel.execute(
        "secret = 'hunter2-but-private'\n"
        "%agent_tools policy inspect_variable deny\n%agent_tools policy list_variables ask"
    )
    assert set_up[0]["status"] == "ok", set_up[1]
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    main = send_execute(kernel, MAIN_CELL, None)
    cells.pump(lambda: "step 1" in cells.text(main))
    beside = send_execute(kernel, "%%agent\nWhat is in secret?", subshell)
    cells.pump(lambda: beside in cells.replies, timeout=60)
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.replies)

    results = _tool_results(fake_api.requests[1])
    for call in ("c1", "c2"):
        assert results[call].get("is_error") is True, _result_text(results[call])
    assert "hunter2" not in json.dumps(fake_api.requests[1])
    assert "policy for this tool is 'deny'" in _result_text(results["c1"])
    assert "needs the user's approval" in _result_text(results["c2"])
    assert results["c3"].get("is_error") is not True  # allowed as before


def test_the_running_cell_pauses_while_an_answer_beside_it_starts(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    """Figure 22 (a): beside a CPU-bound cell, the answer's own work ran at half speed (the two
    share the GIL). The running cell now waits while the answer starts and until its first
    words show (``front/head_start.py``); a cell on a subshell that is not an agent cell, and an
    agent cell beside no running cell, pause nothing."""
    fake_api.add(text("Still spinning."), text("Idle now."))
    cells = Cells(kernel)
    subshell = create_subshell(kernel)
    read = (
        "from jupyter_agent.notebook.runtime.main_pause import main_pause; print(main_pause.pauses)"
    )

    def pauses() -> int:
        asked = send_execute(kernel, read, subshell)
        # the output is on IOPub, before the request's idle there (the reply may come first)
        cells.pump(lambda: asked in cells.idle)
        return int(cells.text(asked).split()[-1])

    main = send_execute(kernel, SPIN_CELL, None)
    cells.pump(lambda: "spinning" in cells.text(main))
    before = pauses()  # a plain cell beside the running one pauses nothing
    beside = send_execute(kernel, "%%agent\nHow is the loop doing?", subshell)
    cells.pump(lambda: beside in cells.replies, timeout=60)
    during = pauses()
    assert main not in cells.replies, "the main cell ended before the answer came"
    (tmp_path / "done").write_text("")
    cells.pump(lambda: main in cells.idle)
    # ipykernel 7.4 says idle before it lets go of the main shell: wait until it has
    ask_busy = (
        "from jupyter_agent.notebook.runtime.subshell import main_shell_busy\n"
        "print(main_shell_busy(get_ipython()))"
    )

    def main_busy() -> bool:
        asked = send_execute(kernel, ask_busy, subshell)
        cells.pump(lambda: asked in cells.idle)
        return cells.text(asked).split()[-1] == "True"

    deadline = time.monotonic() + 30
    while main_busy():
        assert time.monotonic() < deadline, "the main shell stayed busy after its cell"
    idle = send_execute(kernel, "%%agent\nAnd now?", subshell)
    cells.pump(lambda: idle in cells.replies, timeout=60)
    after = pauses()

    assert cells.replies[beside]["status"] == "ok", cells.text(beside)
    assert "Still spinning." in cells.text(beside)
    assert cells.replies[main]["status"] == "ok", cells.text(main)
    assert "spin finished" in cells.text(main)
    assert "Idle now." in cells.text(idle)
    assert before == 0
    assert during >= 1, "the running cell never paused for the answer"
    assert after == during, "an answer beside no running cell paused the kernel"
