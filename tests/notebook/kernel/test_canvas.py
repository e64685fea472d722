"""The notebook as context, in a real IPython ``InteractiveShell``: the cell recorder, its caps,
``notebook_history`` and ``propose_cell`` (the model faked at the HTTP boundary)."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, result_text, text, tool_results, tool_use
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from ipython_shell import run_ok, use_fake

from jupyter_agent import Image
from jupyter_agent.notebook.kernel.history_tool import NotebookHistoryTool
from jupyter_agent.notebook.kernel.recorder import CellRecorder, recorder_for
from jupyter_agent.tools.context import ToolContext


def _png(size: tuple[int, int] = (40, 30)) -> bytes:
    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", size, (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


class HookedPublisher(DisplayPublisher):  # type: ignore[misc]
    """The part of ipykernel's display publisher the recorder listens to: hooks that see each
    ``display_data`` message (a terminal shell's publisher has none)."""

    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell=shell)
        self.hooks: list[Callable[[dict[str, Any]], dict[str, Any] | None]] = []

    def register_hook(self, hook: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        self.hooks.append(hook)

    def unregister_hook(self, hook: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        self.hooks.remove(hook)

    def publish(  # type: ignore[override]
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *args: Any,
        transient: dict[str, Any] | None = None,
        update: bool = False,
        **kwargs: Any,
    ) -> None:
        content = {"data": data, "metadata": metadata or {}, "transient": transient or {}}
        message: dict[str, Any] | None = {
            "msg_type": "update_display_data" if update else "display_data",
            "content": content,
        }
        for hook in list(self.hooks):
            if message is None:
                return
            message = hook(message)


def test_the_recorder_keeps_sources_printed_text_results_and_errors(
    shell: InteractiveShell,
) -> None:
    recorder = recorder_for(shell)
    assert recorder is not None
    shell.run_cell("print('first line')\nx = 6 * 7\nx", store_history=True)
    shell.run_cell("{}['nope']", store_history=True)
    cells = recorder.cells(last=2)
    assert [c.source for c in cells] == ["print('first line')\nx = 6 * 7\nx", "{}['nope']"]
    first, second = cells
    assert first.execution_count is not None
    assert second.execution_count == first.execution_count + 1
    # a terminal shell prints the result (a kernel sends it as an execute_result)
    [printed] = first.outputs
    assert printed.kind == "stream"
    assert printed.full_text() == f"first line\nOut[{first.execution_count}]: 42\n"
    error = second.outputs[-1]  # (a terminal also prints the traceback)
    assert error.kind == "error"
    assert "KeyError: 'nope'" in error.text
    assert "interactiveshell.py" not in error.text  # IPython's own frames are left out
    assert recorder.cells(counts=[first.execution_count]) == [first]
    assert recorder.last_error() is second  # what %agent error will send


def test_the_recorder_caps_a_cell_and_drops_the_oldest_cells(
    shell: InteractiveShell,
) -> None:
    recorder = CellRecorder(shell, max_total_chars=50_000, max_cell_chars=20_000)
    recorder.install()
    try:
        shell.run_cell("print('x' * 100_000)")
        [big] = recorder.cells(last=1)
        assert big.truncated and big.size <= 20_000
        for index in range(5):
            shell.run_cell(f"print('{index}' * 15_000)")
        kept = recorder.cells()
        assert sum(cell.size for cell in kept) <= 50_000
        assert kept[0].source.startswith("print('2'")  # the oldest went first
        assert kept[-1].source.startswith("print('4'")
    finally:
        recorder.uninstall()


async def test_notebook_history_returns_images_and_keeps_the_newest_within_budget(
    shell: InteractiveShell,
    tmp_path: Path,
) -> None:
    png = _png()
    bundle = {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}
    shown, shell.display_pub = shell.display_pub, HookedPublisher(shell)
    recorder = CellRecorder(shell)
    recorder.install()
    try:
        shell.run_cell(
            f"from IPython.display import display\ndisplay({bundle!r}, raw=True)",
            store_history=True,
        )
        for count in range(8, 20):
            shell.run_cell(f"print('output of {count}\\n' + 'y' * 3_500)", store_history=True)
    finally:
        recorder.uninstall()
        shell.display_pub = shown
    figure = recorder.cells(last=13)[0].execution_count
    assert figure is not None
    tool = NotebookHistoryTool(ToolContext(tmp_path), recorder)
    parts = await tool.execute({"cells": [figure]})
    assert parts[1:] == [Image(png, "image/png")]
    assert isinstance(parts[0], str) and f"── cell [{figure}] ──" in parts[0]
    parts = await tool.execute({"last": 13})
    body = parts[0]
    assert isinstance(body, str)
    assert "output of 19" in body and "older cells left out" in body  # newest kept
    assert body.index("output of 18") < body.index("output of 19")  # oldest first
    assert len(body) < 40_000


def test_the_agent_reads_the_notebook_and_proposes_one_cell(
    shell: InteractiveShell,
) -> None:
    shell.run_cell("values = [3, 1, 2]\nprint(sorted(values))", store_history=True)
    fake = use_fake(
        shell,
        Reply(
            [
                tool_use("toolu_1", "notebook_history", {"last": 3}),
                tool_use("toolu_2", "propose_cell", {"code": "values.sort()"}),
                tool_use("toolu_3", "propose_cell", {"code": "print(values)\n"}),
            ]
        ),
        text("Sorted in place, see the new cell."),
    )
    shell.rl_next_input = None
    run_ok(shell, "%%agent\nWhat did I print?")
    results = {r["tool_use_id"]: result_text(r) for r in tool_results(fake.requests[1])}
    assert "[1, 2, 3]" in results["toolu_1"]
    assert "What did I print?" not in results["toolu_1"]
    assert "Proposed 1 lines" in results["toolu_2"]
    # both proposals, in order, as one next cell; nothing was run
    assert shell.rl_next_input == "values.sort()\n\nprint(values)"
    assert shell.user_ns["values"] == [3, 1, 2]


@pytest.mark.parametrize("bad", [{"last": 0}, {"cells": ["3"]}, {"cells": [999]}])
def test_notebook_history_refuses_bad_arguments_with_a_clear_error(
    shell: InteractiveShell,
    bad: dict[str, Any],
) -> None:
    fake: FakeAnthropic = use_fake(
        shell, Reply([tool_use("toolu_1", "notebook_history", bad)]), text("ok")
    )
    run_ok(shell, "%%agent\nlook")
    [result] = tool_results(fake.requests[1])
    assert result.get("is_error") is True


def test_run_python_returns_the_figures_its_code_produced(
    shell: InteractiveShell,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    run_ok(shell, "%agent_tools enable run_python\n%agent_tools policy run_python allow")
    code = (
        "import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([1, 3, 2])\nprint('drawn')"
    )
    fake = use_fake(
        shell, Reply([tool_use("toolu_1", "run_python", {"code": code})]), text("A line.")
    )
    try:
        run_ok(shell, "%%agent\nPlot it")
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    [result] = tool_results(fake.requests[1])
    assert "drawn" in result_text(result)
    images = [b for b in result["content"] if b.get("type") == "image"]
    assert len(images) == 1
    data = base64.b64decode(images[0]["source"]["data"])
    assert data.startswith(b"\x89PNG")


def test_the_static_record_escapes_what_the_tools_returned() -> None:
    from jupyter_agent.notebook.views import tool_format

    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    block = tool_format.html_block(
        "web_fetch", {"url": hostile}, "error", 0.25, hostile, thumbnails=()
    )
    assert "<script>" not in block and "<img src=x" not in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in block
    assert "web_fetch(" in block and "250 ms" in block and "#b00020" in block


def test_request_stop_ends_a_pumped_run_like_an_interrupt() -> None:
    import asyncio
    import threading

    from jupyter_agent.notebook.runtime.bridge import BackgroundLoop, MainThreadBridge

    loop = BackgroundLoop()
    bridge = MainThreadBridge(loop)
    running = threading.Event()
    cleaned = threading.Event()

    async def slow() -> str:
        running.set()
        try:
            await asyncio.sleep(3600)  # only the stop ends the run (the test's timeout, a hang)
        finally:
            cleaned.set()
        return "never"

    def press_stop() -> None:
        if running.wait(30):  # the run is pumping: its job has started
            bridge.request_stop()

    try:
        bridge.request_stop()  # idle: does nothing to the next run
        threading.Thread(target=press_stop, daemon=True).start()
        outcome = bridge.run(slow(), lambda event: None)
        assert outcome.interrupted and outcome.value is None
        assert cleaned.is_set()  # the task was cancelled and cleaned up

        # the next run is not stopped by the old request
        async def quick() -> str:
            return "ok"

        assert bridge.run(quick(), lambda event: None).value == "ok"
    finally:
        loop.close()
