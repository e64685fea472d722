"""Which cells take a head start beside a running cell (``front/head_start.py``); the pause
itself is ``tests/notebook/runtime/test_main_pause.py``, the whole of it in a kernel
``tests/notebook/runtime/test_subshell.py``."""

from __future__ import annotations

import pytest

from jupyter_agent.notebook.front.head_start import is_agent_cell


@pytest.mark.parametrize(
    ("source", "is_agent"),
    [
        ("%%agent\nHow is the loop doing?", True),
        ("  %%agent --model x\nhi", True),
        ('%agent ask "how is it going?"', True),
        ("%agent config", False),
        ("print('%%agent')", False),
        ("", False),
    ],
)
def test_which_cells_take_a_head_start(source: str, is_agent: bool) -> None:
    assert is_agent_cell(source) is is_agent
