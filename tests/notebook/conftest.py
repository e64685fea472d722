"""Fixtures of the notebook-layer tests: the fake Messages API on loopback and a real kernel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic
from kernel_frontend import Kernel
from notebook_fake_server import serve


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """The fake Messages API on a loopback port; a kernel started now talks to it."""
    fake = FakeAnthropic()
    with serve(fake) as base_url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.delenv("JUPYTER_AGENT_PROVIDER", raising=False)
        monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
        yield fake


@pytest.fixture
def kernel_class() -> type[Kernel]:
    """How the ``kernel`` fixture drives its kernel; a test module overrides this fixture to
    drive it its own way (a subclass)."""
    return Kernel


@pytest.fixture
def kernel(tmp_path: Path, fake_api: FakeAnthropic, kernel_class: type[Kernel]) -> Iterator[Kernel]:
    """A real kernel in ``tmp_path`` with the extension loaded, its model the fake API."""
    kernel = kernel_class(tmp_path)
    try:
        reply, outputs = kernel.execute("%load_ext jupyter_agent")
        assert reply["status"] == "ok", outputs
        yield kernel
    finally:
        kernel.close()
