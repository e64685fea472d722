"""nbval runs the tutorials with the offline model, whatever the developer's environment holds.

The notebooks pick Claude when ``ANTHROPIC_API_KEY`` is set. Under pytest their checked outputs
are those of the recorded sessions, so the kernels nbval starts for ``notebooks/`` must not see a
key: ``JUPYTER_AGENT_PROVIDER=offline`` forces the offline model (the kernel inherits this
process's environment when nbval starts it, at the first cell of each notebook).
"""

from __future__ import annotations

import os

import pytest

#: Tutorials copy notebooks into their git-ignored scratch folders when they run; those copies
#: are not tutorials of their own (a second run of the suite would otherwise collect them).
collect_ignore_glob = ["scratch/*"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.path.suffix == ".ipynb":
        os.environ["JUPYTER_AGENT_PROVIDER"] = "offline"
