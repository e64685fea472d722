"""Tools that see the user's Python session: ``list_variables``, ``inspect_variable``,
``run_python`` — and, with the extension loaded, ``notebook_history`` and ``propose_cell``
(``kernel_tools`` assembles them).

They exist only where there is a live namespace (the notebook session adds them to its agent's
registry). ``run_python`` changes the user's state, so it is destructive: disabled until the user
enables it, then asking before each call. Its code runs on the kernel's main thread — where the
user's objects, matplotlib and widgets expect to be used — through the main-thread bridge, and a
kernel interrupt stops it like any cell. It returns the figures the code produced as images
(``figures.py``). While it runs, its call's progress says how long it has run and the last line
it printed (``cell_run.progress_while``, as ``run_cell``'s; a served task's status carries it).

``inspect_variable`` describes a value in a worker thread, not on the event loop: a summary of a
big frame takes time, and the call's deadline (the agent's ``tool_timeout``) must be able to end
the wait while the loop keeps serving. A lazy frame is described without being computed
(``summarize.lazy_library``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import traceback
import types
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, ClassVar

from ...tools.base import BuiltinTool, Image, ToolCapabilities, ToolFailure
from ...tools.context import ToolContext
from ...tools.progress import ProgressCallback, current_reporter
from ..coauthor.cell_run import progress_while
from ..runtime import executor
from ..runtime.bridge import MainThreadBridge
from ..runtime.executor import parse_cell, run_cell_code
from ..runtime.figures import FigureCapture
from ..text import clip
from .summarize import shape_of, summarize, type_name

#: Characters of captured output ``run_python`` returns.
MAX_RUN_OUTPUT = 10_000
#: Characters of the printed text kept for ``run_python``'s progress (its last line).
TAIL_CHARS = 4096
#: Variables ``list_variables`` lists at most.
MAX_LISTED_VARIABLES = 200

# Threads of their own: a summary abandoned at the deadline must not hold the loop's executor.
_summaries = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="summary")

_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})


def is_user_variable(name: str, value: Any, shell: Any = None) -> bool:
    """Whether ``name`` is one of the user's own variables, as ``list_variables`` shows them: not
    a private (``_``) name, not IPython's history (``In``, ``Out``, ``_ih``, ...) or helpers, not
    a module, nor an imported class or function."""
    if name.startswith("_") or name in _IPYTHON_NAMES:
        return False
    hidden_ns = getattr(shell, "user_ns_hidden", None)
    if hidden_ns is not None and name in hidden_ns and hidden_ns[name] is value:
        return False
    if isinstance(value, types.ModuleType):
        return False
    if isinstance(value, type) and value.__module__ not in ("__main__", "builtins"):
        return False  # imported classes (``from pandas import DataFrame``)
    # imported functions
    return not (
        callable(value) and getattr(value, "__module__", "__main__") not in ("__main__", None)
    )


def user_variables(namespace: dict[str, Any], shell: Any = None) -> dict[str, Any]:
    """The user's own variables: no modules, private names, IPython's history or builtins."""
    return {
        name: value for name, value in namespace.items() if is_user_variable(name, value, shell)
    }


class ListVariablesTool(BuiltinTool):
    name = "list_variables"
    description = (
        "List the variables defined in the user's Jupyter session (their Python kernel): name, "
        "type and size/shape of each. Use it to discover what data the user has loaded; use "
        "inspect_variable to look at one of them."
    )
    input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def __init__(self, context: ToolContext, namespace: dict[str, Any], shell: Any = None) -> None:
        super().__init__(context)
        self.namespace = namespace
        self.shell = shell

    async def execute(self, args: dict[str, object]) -> str:
        variables = user_variables(self.namespace, self.shell)
        if not variables:
            return "No user variables are defined in the session."
        lines = []
        for name, value in list(variables.items())[:MAX_LISTED_VARIABLES]:
            size = shape_of(value)
            lines.append(f"{name}: {type_name(value)}" + (f" {size}" if size else ""))
        extra = len(variables) - MAX_LISTED_VARIABLES
        if extra > 0:
            lines.append(f"… and {extra} more")
        return "\n".join(lines)


class InspectVariableTool(BuiltinTool):
    name = "inspect_variable"
    description = (
        "Describe one variable of the user's Jupyter session: its type, size and a sample of "
        "its contents (a DataFrame by shape, dtypes and first rows). The summary is capped "
        "at max_chars characters. Only the variables list_variables lists can be inspected."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The variable's name, e.g. df"},
            "max_chars": {
                "type": "integer",
                "minimum": 200,
                "maximum": 50_000,
                "description": "Size cap of the summary (default 4000)",
            },
        },
        "required": ["name"],
    }

    def __init__(self, context: ToolContext, namespace: dict[str, Any], shell: Any = None) -> None:
        super().__init__(context)
        self.namespace = namespace
        self.shell = shell

    async def execute(self, args: dict[str, object]) -> str:
        name = str(args["name"])
        budget = int(args.get("max_chars", 4000))  # type: ignore[call-overload]
        if name not in self.namespace:
            raise ToolFailure(f"no variable named {name!r} in the session ({self._known()})")
        value = self.namespace[name]
        if not is_user_variable(name, value, self.shell):
            # The same names list_variables hides: IPython's input history (In, _ih, _i1, ...)
            # holds every cell the user ran, and private names are the user's own business.
            raise ToolFailure(
                f"{name!r} is not one of the user's variables: private names (starting with _), "
                "IPython's history and helpers, modules and imported objects cannot be inspected "
                f"({self._known()})"
            )
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_summaries, summarize, value, budget)

    def _known(self) -> str:
        known = ", ".join(sorted(user_variables(self.namespace, self.shell))[:50]) or "none"
        return f"variables: {known}"


class _Tail:
    """The last characters the code printed, to stdout or stderr, for its progress."""

    def __init__(self) -> None:
        self.text = ""


class _Captured(io.StringIO):
    """A captured stream that also keeps the tail of what was written (to either stream)."""

    def __init__(self, tail: _Tail) -> None:
        super().__init__()
        self._tail = tail

    def write(self, text: str) -> int:
        written = super().write(text)  # first: anything but text fails as StringIO's own
        self._tail.text = (self._tail.text + text[-TAIL_CHARS:])[-TAIL_CHARS:]
        return written


def run_code(namespace: dict[str, Any], code: str, report: ProgressCallback | None = None) -> str:
    """Run ``code`` in ``namespace``; report stdout, stderr, the last expression and any error.
    ``report``: the call's progress callback (elapsed seconds, last line printed).

    Must run on the thread that owns the namespace (the kernel's main thread).
    """
    try:
        tree, last_expression = parse_cell(code, "<run_python>")
    except SyntaxError as exc:
        raise ToolFailure(f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    tail = _Tail()
    stdout, stderr = _Captured(tail), _Captured(tail)

    def printed() -> list[dict[str, Any]]:  # what the code printed so far, as one stream
        return [{"output_type": "stream", "text": tail.text}]

    result_repr: str | None = None
    error: str | None = None
    namespace.setdefault("__builtins__", __builtins__)
    with redirect_stdout(stdout), redirect_stderr(stderr), progress_while(printed, report):
        try:
            value = run_cell_code(namespace, tree, last_expression, "<run_python>")
            if value is not None:
                result_repr = repr(value)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            ours = (__file__, executor.__file__)
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename not in ours]
            lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
            error = "".join(lines) + "".join(traceback.format_exception_only(type(exc), exc))
    sections = []
    if stdout.getvalue():
        sections.append("stdout:\n" + stdout.getvalue().rstrip("\n"))
    if stderr.getvalue():
        sections.append("stderr:\n" + stderr.getvalue().rstrip("\n"))
    if result_repr is not None:
        sections.append("result:\n" + result_repr)
    if error is not None:
        sections.append("error:\n" + error.rstrip("\n"))
    if not sections:
        sections.append("(ran without output)")
    text = clip("\n\n".join(sections), MAX_RUN_OUTPUT)
    if error is not None:
        raise ToolFailure(text)
    return text


class RunPythonTool(BuiltinTool):
    name = "run_python"
    description = (
        "Run Python code in the user's Jupyter session (their kernel's namespace): variables "
        "you define stay defined for the user. Returns stdout, stderr, the value of the last "
        "expression and any traceback. Prefer inspect_variable for just looking at data."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python source to run"}},
        "required": ["code"],
    }
    destructive: ClassVar[bool] = True
    #: elapsed seconds and the last line printed while the code runs (``progress_while``)
    capabilities: ClassVar[ToolCapabilities] = ToolCapabilities(
        destructive=True, reports_progress=True
    )

    def __init__(
        self,
        context: ToolContext,
        namespace: dict[str, Any],
        bridge: MainThreadBridge,
        shell: Any = None,
    ) -> None:
        super().__init__(context)
        self.namespace = namespace
        self.bridge = bridge
        self.shell = shell

    async def execute(self, args: dict[str, object]) -> list[str | Image]:
        code = str(args["code"])
        report = current_reporter()  # this call's: the main thread does not carry it
        return await self.bridge.call_on_main(lambda: self._run(code, report))

    def _run(self, code: str, report: ProgressCallback | None = None) -> list[str | Image]:
        """On the main thread: the code's text report, then the figures it produced."""
        with FigureCapture(self.shell) as capture:
            text = run_code(self.namespace, code, report)
        if capture.images:
            text += f"\n\n({len(capture.images)} figure(s) produced, sent as images)"
        return [text, *capture.images]
