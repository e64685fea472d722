"""Fixtures of the tool tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_layout import Layout, build


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """The workspace of ``hostile_layout``: links out of it, a look-alike sibling, a secret."""
    return build(tmp_path)
