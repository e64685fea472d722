"""An agent cell that waited behind a running cell says so (issue 37, SPEC "Long work").

Without our extension (VS Code, a console, nbclient run by hand) a ``%%agent`` cell sent while
another cell runs waits on the main shell; its answer must say, in one line, that it waited and
why. The test plays such a frontend: it sends a slow cell and, at once, an agent cell behind it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, text
from kernel_frontend import Cells, Kernel, send_execute

pytestmark = pytest.mark.slow

NOTE = re.compile(r"↳ This cell waited (\d+) s behind a running cell")


def test_an_agent_cell_queued_behind_a_running_cell_says_it_waited(
    kernel: Kernel, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    fake_api.add(text("Here."), text("Here again."))
    kernel.execute("%load_ext jupyter_agent")
    cells = Cells(kernel)
    slow = send_execute(kernel, "import time\ntime.sleep(3)\nprint('slow done')", None)
    queued = send_execute(kernel, "%%agent\nWhat is x?", None)
    cells.pump(lambda: queued in cells.replies, timeout=90)
    assert "slow done" in cells.text(slow)
    found = NOTE.search(cells.text(queued))
    assert found, cells.text(queued)
    assert int(found.group(1)) >= 2  # it waited for (most of) the slow cell's 3 s
    # an agent cell sent to an idle kernel waited for nothing, and says nothing of it
    alone = send_execute(kernel, "%%agent\nAnd now?", None)
    cells.pump(lambda: alone in cells.replies, timeout=90)
    assert "Here again." in cells.text(alone)
    assert not NOTE.search(cells.text(alone)), cells.text(alone)
