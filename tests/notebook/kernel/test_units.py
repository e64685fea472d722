"""Small pieces of the notebook layer: summaries, ``{{name}}`` injection, prices, kernel tools."""

from __future__ import annotations

import asyncio
import math
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_agent.events import Usage
from jupyter_agent.notebook.kernel.kernel_tools import (
    InspectVariableTool,
    ListVariablesTool,
    run_code,
    user_variables,
)
from jupyter_agent.notebook.kernel.summarize import summarize
from jupyter_agent.notebook.session.prompt_vars import expand_variables
from jupyter_agent.notebook.spend.pricing import estimate_cost, price_for
from jupyter_agent.notebook.views.tool_format import short_args, title
from jupyter_agent.tools.base import ToolFailure
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.registry import ToolRegistry

pandas = pytest.importorskip("pandas")


def test_dataframe_summary_has_shape_dtypes_and_head_only() -> None:
    frame = pandas.DataFrame({"region": ["north", "south"] * 50_000, "units": range(100_000)})
    summary = summarize(frame, 1500)
    assert len(summary) <= 1500
    assert summary.startswith("DataFrame with 100000 rows × 2 columns")
    assert "region: object" in summary or "region: str" in summary
    assert "units: int64" in summary
    assert "north" in summary
    assert "99999" not in summary


def test_series_list_dict_and_string_summaries() -> None:
    series = pandas.Series(range(1000), name="score")
    assert summarize(series).startswith("Series 'score' of 1000 values, dtype int64")
    assert summarize(list(range(10_000)), 300).startswith("list of 10000 items (int)")
    mapping = {f"key{i}": i for i in range(1000)}
    text = summarize(mapping, 500)
    assert text.startswith("dict with 1000 keys") and "more keys" in text and len(text) <= 500
    long = "x" * 100_000
    text = summarize(long, 1000)
    assert text.startswith("str of length 100000") and text.endswith(" characters cut …]")
    assert len(text) <= 1000


def test_a_broken_repr_does_not_break_the_summary() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    text = summarize(Broken())
    assert text.startswith("tests.notebook.kernel.test_units.")
    assert "Broken" in text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=40,
)


@settings(max_examples=100, deadline=None)
@given(value=json_values, budget=st.integers(min_value=80, max_value=3000))
def test_summaries_never_exceed_their_budget(value: Any, budget: int) -> None:
    assert len(summarize(value, budget)) <= budget


def test_injection_expands_only_defined_identifiers() -> None:
    namespace = {"df": [1, 2, 3], "name": "Ada"}
    prompt = 'Use {{df}} and {{ name }}; leave {{missing}}, {x}, ${df} and f"{{{{df}}}}" alone'
    expanded = expand_variables(prompt, namespace)
    assert expanded.variables == ["df", "name"]
    first_line = expanded.text.split("\n\n")[0]
    assert first_line == 'Use `df` and `name`; leave {{missing}}, {x}, ${df} and f"{{`df`}}" alone'
    assert expanded.text.count('<variable name="df" type="list">') == 1


def test_a_prompt_without_references_is_untouched() -> None:
    prompt = "def f():\n    return {'a': {{1: 2}}}\n"
    assert expand_variables(prompt, {"f": 1}).text == prompt


def test_injection_respects_the_budget() -> None:
    namespace = {"a": "x" * 50_000, "b": list(range(50_000))}
    expanded = expand_variables("{{a}} {{b}}", namespace, budget=2000)
    assert len(expanded.text) < 2600


def test_prices() -> None:
    assert price_for("claude-sonnet-4-5-20250929") is not None
    assert price_for("some-other-model") is None
    cost = estimate_cost("claude-haiku-4-5", Usage(input_tokens=1_000_000, output_tokens=100_000))
    assert cost is not None and math.isclose(cost, 1.0 + 0.5)


def test_tool_titles_are_short() -> None:
    arguments = {"file_path": "a" * 300, "content": "line\n" * 100, "limit": 5}
    assert len(short_args(arguments)) <= 60
    assert title("write_file", arguments, "done", 2.5).endswith("· done · 2.5 s")


def test_run_code_reports_output_value_and_errors() -> None:
    namespace: dict[str, Any] = {}
    out = run_code(
        namespace, "import sys\nx = 6 * 7\nprint('hi')\nprint('oops', file=sys.stderr)\nx"
    )
    assert out == "stdout:\nhi\n\nstderr:\noops\n\nresult:\n42"
    assert namespace["x"] == 42
    assert run_code(namespace, "y = 1") == "(ran without output)"

    with pytest.raises(ToolFailure) as failure:
        run_code(namespace, "def f():\n    return 1 / 0\nprint('before')\nf()")
    message = str(failure.value)
    assert "stdout:\nbefore" in message
    assert "ZeroDivisionError: division by zero" in message
    assert 'File "<run_python>", line 2, in f' in message
    assert "kernel_tools.py" not in message

    with pytest.raises(ToolFailure, match="SyntaxError"):
        run_code(namespace, "def (")


def test_run_code_tells_its_progress_the_last_line_printed_to_either_stream() -> None:
    """Each report says how long the code has run and the last line it printed so far,
    stdout or stderr, whichever came last; the code waits until a report has said so."""
    import threading

    reports: list[tuple[float, float | None, str | None]] = []
    heard = threading.Event()

    def report(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))
        if message and "last output: step 2 of 3" in message:
            heard.set()

    namespace: dict[str, Any] = {"heard": heard}
    code = (
        "import sys\nprint('step 1 of 3')\nprint('step 2 of 3\\n', file=sys.stderr)\n"
        "assert heard.wait(30)\nprint('step 3 of 3')"
    )
    out = run_code(namespace, code, report)
    assert "stdout:\nstep 1 of 3\nstep 3 of 3" in out
    assert reports and reports[0][1] is None and reports[0][0] >= 1
    seconds = reports[0][0]
    assert (seconds, None, f"{seconds:g} s elapsed; last output: step 2 of 3") in reports, reports


def test_user_variables_skip_modules_private_and_history() -> None:
    def helper() -> int:
        return 1

    helper.__module__ = "__main__"  # as for a function defined in a notebook cell
    namespace = {
        "df": [1],
        "_hidden": 1,
        "In": [],
        "Out": {},
        "math": math,
        "Path": Path,
        "helper": helper,
        "summarize": summarize,  # an imported function
    }
    assert set(user_variables(namespace)) == {"df", "helper"}


def test_variable_tools(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"frame": pandas.DataFrame({"a": [1, 2]}), "mod": types}
    registry = ToolRegistry()
    context = ToolContext(tmp_path)
    registry.register(ListVariablesTool(context, namespace))
    registry.register(InspectVariableTool(context, namespace))
    listed = asyncio.run(registry.call("list_variables", {}))
    assert listed.content == "frame: DataFrame (2, 1)"
    inspected = asyncio.run(registry.call("inspect_variable", {"name": "frame"}))
    assert inspected.content.startswith("DataFrame with 2 rows × 1 columns")
    missing = asyncio.run(registry.call("inspect_variable", {"name": "nope"}))
    assert missing.is_error
    assert "no variable named 'nope'" in missing.content and "frame" in missing.content
