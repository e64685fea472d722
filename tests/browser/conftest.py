"""Fixtures of the browser tests: a Jupyter server for each front end in turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_jupyter import LAB, NOTEBOOK7, FrontEnd, Jupyter, serve_jupyter


@pytest.fixture(params=[LAB, NOTEBOOK7], ids=lambda front_end: front_end.name)
def jupyter(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Jupyter]:
    """JupyterLab, then Notebook 7."""
    with serve_jupyter(request.param, tmp_path) as server:
        yield server


@pytest.fixture(params=[LAB, NOTEBOOK7], ids=lambda front_end: front_end.name)
def front_end(request: pytest.FixtureRequest) -> FrontEnd:
    """JupyterLab, then Notebook 7, for a test that starts its own server."""
    return request.param  # type: ignore[no-any-return]
