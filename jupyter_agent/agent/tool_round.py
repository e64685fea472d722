"""``ToolRound``: the tool calls of one model reply, from verdict to the message that answers them.

Every call passes the toolbox's policy gate (``gate.py``: run, refuse, or ask the user), runs under
``tool_timeout`` and its result is capped (``results.py``). Calls run concurrently — at most
``max_parallel`` at a time, so one reply of 150 searches does not start 150 processes — and calls
waiting for the user's approval wait in their own tasks (one question at a time), so the allowed
calls of the same reply run meanwhile. All results go back in one user message, in the model's
order, whatever happens: a cancelled round answers every call (``interrupted``, or ``not run``
for a call that never started), so the conversation stays valid.

A refused call's ``ToolCallFinished`` carries the refusal as data (``refused``): the views show
``denied`` from it, never from the result's wording.

Each call runs with its own progress callback (``tools/progress.py``): what a tool reports comes
out as ``ToolCallProgress`` events while the round waits for its calls. A reply's only call runs
in the round's own task unless its tool declares ``reports_progress`` (then it gets a task, so
that its progress is yielded while it runs). Each report replaces its call's last one not yet
yielded, and the round yields progress at most every ``PROGRESS_INTERVAL_S`` (a call's end yields
its latest at once): an MCP server's 20,000 notifications are a few dozen events, not 20,000, and
the latest is never dropped. A message is cut to ``MAX_PROGRESS_MESSAGE_CHARS`` where the event is
made, so no event carries a server's megabytes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from ..approvals import ApprovalHandler, ApprovalRequest
from ..events import AgentEvent, Refusal, ToolCallFinished, ToolCallProgress, ToolCallStarted
from ..tools.base import ToolResult, capabilities_of, checks_approval
from ..tools.progress import MAX_PROGRESS_MESSAGE_CHARS, reporting
from ..tools.result_budget import result_budget
from . import conversation
from .chat_state import Call
from .gate import Ask, Refuse, Run, Verdict
from .results import fit_result, result_block
from .toolbox import Toolbox

#: Tool calls of one reply that run at the same time, by default.
DEFAULT_MAX_PARALLEL_TOOLS = 8
#: The shortest pause between two yields of the calls' progress (seconds).
PROGRESS_INTERVAL_S = 0.1


@dataclass
class ToolRound:
    """The calls of one reply; ``results`` fills in as they finish (``answer`` sends them)."""

    calls: list[Call]
    toolbox: Toolbox
    approval_handler: ApprovalHandler | None
    max_result_chars: int | None
    max_parallel: int = DEFAULT_MAX_PARALLEL_TOOLS
    results: dict[str, ToolResult] = field(default_factory=dict)
    refusals: dict[str, Refusal] = field(default_factory=dict)
    #: The latest progress of each call since the round last yielded its progress, the future
    #: that wakes the round's wait, the timer that sets it once progress is due, and when
    #: (loop time) progress may next be yielded.
    _progress: dict[str, ToolCallProgress] = field(default_factory=dict, repr=False)
    _progress_wake: asyncio.Future[None] | None = field(default=None, repr=False)
    _progress_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    _progress_due: float = field(default=0.0, repr=False)

    def finished(self, call: Call) -> ToolCallFinished:
        result = self.results[call.id]
        return ToolCallFinished(
            call.id,
            call.name,
            result.content,
            result.is_error,
            result.duration_s,
            result.images,
            self.refusals.get(call.id),
            result.redacted,
        )

    def answer_blocks(self) -> list[dict[str, object]]:
        """The ``tool_result`` blocks of every call, in the model's order."""
        return [result_block(call.id, self.results[call.id]) for call in self.calls]

    # -- a reply whose calls never run ------------------------------------------------------------

    def refuse_all(self, reason: str) -> list[AgentEvent]:
        """Answer every call of a reply that did not stop for ``tool_use``, running none."""
        why = (
            f"Error: {{name}} was not run: your reply stopped with stop_reason {reason or 'none'!r}"
            ", not 'tool_use', so this call may be incomplete (its arguments cut off)."
        )
        if reason in ("max_tokens", "model_context_window_exceeded"):
            why += (
                " The reply hit the output limit: call the tool again with smaller input "
                "(split large content across several calls) and keep the reply short."
            )
        events: list[AgentEvent] = []
        for call in self.calls:
            self._refused(call, why.format(name=call.name), "incomplete")
            events.append(ToolCallStarted(call.id, call.name, call.input))
            events.append(self.finished(call))
        return events

    def _refused(self, call: Call, reason: str, why: Refusal) -> None:
        self.results[call.id] = ToolResult(reason, is_error=True)
        self.refusals[call.id] = why

    # -- running ---------------------------------------------------------------------------------

    async def run(self) -> AsyncGenerator[AgentEvent, None]:
        """Run the calls; yields ``ToolCallStarted``/``ToolCallFinished``. Every call has a
        result when this ends, however it ends (``conversation.INTERRUPTED``/``NOT_RUN``)."""
        tasks: dict[str, asyncio.Task[ToolResult]] = {}
        #: Calls that began to run (a call still waiting for approval or a slot never ran).
        ran: set[str] = set()
        try:
            verdicts = await self._verdicts()
            if (
                len(self.calls) == 1
                and isinstance(verdicts[0], Run)
                and not self._reports_progress(self.calls[0])
            ):
                # the usual turn: one call that runs, in this task (no task and no wait to set
                # up); an interrupt reaches it as it would reach its task
                call = self.calls[0]
                ran.add(call.id)
                yield ToolCallStarted(call.id, call.name, call.input)
                self.results[call.id] = await self._invoke(call)
                for event in self._take_progress():  # reported though not declared: late
                    yield event
                yield self.finished(call)
                verdicts = []
            one_question_at_a_time = asyncio.Lock()
            slots = asyncio.Semaphore(max(1, self.max_parallel))
            for call, verdict in zip(self.calls, verdicts, strict=False):
                started = ToolCallStarted(
                    call.id, call.name, call.input, asks=isinstance(verdict, Ask)
                )
                if isinstance(verdict, Refuse):
                    self._refused(call, verdict.reason, verdict.why)
                    yield started
                    yield self.finished(call)
                    continue
                ask = verdict if isinstance(verdict, Ask) else None
                if ask is not None:  # the UI shows the call first, then asks the user about it
                    yield started
                tasks[call.id] = asyncio.create_task(
                    self._run_one(call, ask, one_question_at_a_time, slots, ran),
                    name=f"{'tool' if ask is None else 'approval'} {call.name} {call.id}",
                )
                if ask is None:  # the call is on its way while the UI draws it
                    yield started
            by_id = {call.id: call for call in self.calls}
            order = list(tasks.values())
            pending = {task: call_id for call_id, task in tasks.items()}
            loop = asyncio.get_running_loop()
            while pending:
                wake = self._progress_wake = loop.create_future()
                self._arm_progress_wake()
                try:
                    done, _ = await asyncio.wait(
                        [*pending, wake], return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    self._disarm_progress_wake()
                progress = self._take_progress()
                if progress:
                    self._progress_due = loop.time() + PROGRESS_INTERVAL_S
                for event in progress:
                    if event.call_id not in self.results:
                        yield event
                for task in [task for task in order if task in done]:  # the model's order
                    call_id = pending.pop(task)
                    self.results[call_id] = task.result()
                    yield self.finished(by_id[call_id])
        except BaseException:
            try:
                for task in tasks.values():
                    task.cancel()
                await asyncio.gather(*tasks.values(), return_exceptions=True)
            finally:
                self._settle_unfinished(tasks, ran)
            raise

    async def _verdicts(self) -> list[Verdict]:
        """The gate's verdict on each call. A tool's own check (``needs_approval``: git_commit
        runs ``git status``) may take a while: then the verdicts are reached off the loop."""
        gate = self.toolbox.gate

        def judge() -> list[Verdict]:
            return [gate.verdict(call.name, call.raw_input) for call in self.calls]

        registry = self.toolbox.registry
        if any(checks_approval(registry.get_tool(c.name)) for c in self.calls):
            return await asyncio.to_thread(judge)
        return judge()

    def _settle_unfinished(self, tasks: dict[str, asyncio.Task[ToolResult]], ran: set[str]) -> None:
        for call in self.calls:
            if call.id in self.results:
                continue
            if call.id not in ran:
                self.results[call.id] = ToolResult(conversation.NOT_RUN, is_error=True)
                continue
            running = tasks.get(call.id)  # None for a call that ran in the round's own task
            if (
                running is not None
                and running.done()
                and not running.cancelled()
                and running.exception() is None
            ):
                self.results[call.id] = running.result()
            else:
                self.results[call.id] = ToolResult(conversation.INTERRUPTED, is_error=True)

    async def _run_one(
        self,
        call: Call,
        ask: Ask | None,
        lock: asyncio.Lock,
        slots: asyncio.Semaphore,
        ran: set[str],
    ) -> ToolResult:
        if ask is not None:
            request = ApprovalRequest(call.id, call.name, dict(call.input), ask.reason)
            async with lock:
                decision = await self.toolbox.gate.decide(self.approval_handler, request)
            if isinstance(decision, Refuse):
                self.refusals[call.id] = decision.why
                return ToolResult(decision.reason, is_error=True)
        async with slots:
            ran.add(call.id)
            return await self._invoke(call)

    async def _invoke(self, call: Call) -> ToolResult:
        """Run one call through the registry, within ``tool_timeout``, its result capped, with
        its own progress callback.

        A ``CancelledError`` that the tool raised itself (nobody cancelled this task) is the
        tool's failure, not the user's interrupt.
        """
        loop = asyncio.get_running_loop()
        loop_thread = threading.get_ident()

        def report(progress: float, total: float | None, message: str | None) -> None:
            if message is not None and len(message) > MAX_PROGRESS_MESSAGE_CHARS:
                message = message[:MAX_PROGRESS_MESSAGE_CHARS]
            event = ToolCallProgress(call.id, call.name, progress, total, message)
            if threading.get_ident() == loop_thread:
                self._note_progress(event)
            elif not loop.is_closed():  # from the call's worker thread
                loop.call_soon_threadsafe(self._note_progress, event)

        with reporting(report):
            return await invoke(self.toolbox, call.name, call.input, self.max_result_chars)

    def _reports_progress(self, call: Call) -> bool:
        return capabilities_of(self.toolbox.registry.get_tool(call.name)).reports_progress

    def _note_progress(self, event: ToolCallProgress) -> None:
        self._progress.pop(event.call_id, None)  # the latest goes last, after other calls'
        self._progress[event.call_id] = event
        self._arm_progress_wake()

    def _arm_progress_wake(self) -> None:
        """Wake the round's wait for the progress noted: at once if it is due, else by a timer
        when it is (one timer, however many reports come meanwhile)."""
        wake = self._progress_wake
        if not self._progress or wake is None or wake.done() or self._progress_timer is not None:
            return
        loop = asyncio.get_running_loop()
        delay = self._progress_due - loop.time()
        if delay <= 0:
            wake.set_result(None)
        else:
            self._progress_timer = loop.call_later(delay, self._progress_is_due, wake)

    def _progress_is_due(self, wake: asyncio.Future[None]) -> None:
        self._progress_timer = None
        if not wake.done():
            wake.set_result(None)

    def _disarm_progress_wake(self) -> None:
        if self._progress_timer is not None:
            self._progress_timer.cancel()
            self._progress_timer = None
        if self._progress_wake is not None:
            self._progress_wake.cancel()
            self._progress_wake = None

    def _take_progress(self) -> list[ToolCallProgress]:
        taken = list(self._progress.values())
        self._progress = {}
        return taken


async def invoke(
    toolbox: Toolbox,
    name: str,
    arguments: dict[str, object],
    max_result_chars: int | None,
    clock: Callable[[], float] = time.perf_counter,
) -> ToolResult:
    """One call of ``name`` through the toolbox's registry, under its ``tool_timeout``, capped."""
    started = clock()
    timeout = toolbox.tool_timeout
    try:
        # a paging tool (read_file) fits its page to the cap below, so its note stays true
        with result_budget(max_result_chars):
            async with asyncio.timeout(timeout):
                result = await toolbox.registry.call(name, arguments)
    except TimeoutError:
        result = ToolResult(
            f"Error: {name} timed out after {_seconds(timeout)} s and was "
            "cancelled. Try a smaller task, or a different approach.",
            is_error=True,
            duration_s=clock() - started,
        )
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        result = ToolResult(
            f"Error: {name} failed: the tool's own work was cancelled (CancelledError).",
            is_error=True,
            duration_s=clock() - started,
        )
    return fit_result(result, max_result_chars)


def _seconds(value: float | None) -> str:
    return f"{value:g}" if value is not None else "?"
