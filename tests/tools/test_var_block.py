"""``VarBlock``: the variable is the value inside the block and what it was after, however the
block ends; each task and its worker thread see their own."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

import pytest

from jupyter_agent.tools.progress import current_reporter, reporting
from jupyter_agent.tools.result_budget import page_chars, result_budget
from jupyter_agent.tools.var_block import VarBlock

_VAR: ContextVar[str | None] = ContextVar("test_var_block", default=None)


def test_the_value_holds_inside_and_the_old_one_comes_back_after_however_it_ends() -> None:
    with VarBlock(_VAR, "outer"):
        assert _VAR.get() == "outer"
        with VarBlock(_VAR, "inner"):
            assert _VAR.get() == "inner"
        assert _VAR.get() == "outer"
        with pytest.raises(KeyError), VarBlock(_VAR, "failing"):
            raise KeyError("x")
        assert _VAR.get() == "outer"
    assert _VAR.get() is None


def test_concurrent_calls_and_their_worker_threads_each_see_their_own() -> None:
    async def call(name: str, budget: int) -> tuple[object, int]:
        def report(progress: float, total: float | None, message: str | None) -> None:
            del progress, total, message

        report.__name__ = name
        with reporting(report), result_budget(budget):
            await asyncio.sleep(0)  # the other call runs meanwhile

            def in_thread() -> tuple[object, int]:
                reporter = current_reporter()
                return getattr(reporter, "__name__", None), page_chars(10**9)

            return await asyncio.to_thread(in_thread)

    async def both() -> list[tuple[object, int]]:
        return await asyncio.gather(call("a", 50_000), call("b", 80_000))

    (name_a, chars_a), (name_b, chars_b) = asyncio.run(both())
    assert (name_a, name_b) == ("a", "b")
    assert chars_a < 50_000 < chars_b < 80_000
    assert current_reporter() is None and page_chars(123) == 123
