"""``%agent serve``: the live kernel as an MCP server for other agents (Claude Code, Codex, ...).

The server itself (loopback only, a bearer token, the policy gate) is ``serve_http.py``; this
module is its notebook side, which has three jobs:

- **The cell that ran ``%agent serve`` is the server's place in the notebook.** It prints the
  lines that connect Claude Code, Codex and any ``mcpServers`` client, then holds two displays:
  the calls made through the server (each call's static record — title, result excerpt — as the
  ``%%agent`` cells draw it with ``call_record.py``, redrawn in place) and the approval prompt for
  a call whose policy is ``ask``. Both are updated through their ``display_id``, so they change
  long after the cell ended and the saved notebook keeps the record.
- **Everything that touches displays, widgets or the user's namespace runs on the kernel's main
  thread.** While a ``%%agent`` cell runs, its pump does that work (``bridge.call_on_main``);
  between cells the kernel's own event loop does (``kernel.io_loop.add_callback``: the bridge's
  ``idle_runner``), and while any other cell runs the work waits for it to end — a main-thread
  tool (``run_python``) then tells its caller "kernel busy, queued" as an MCP progress
  notification. An Approve click is an ordinary widget message: the kernel handles it between
  cells, the ``%%agent`` pump during one.
- **It ends with the session**: ``%agent serve stop``, ``%unload_ext`` and the kernel's exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import secrets
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core.error import UsageError

from ...approvals import ApprovalRequest, Decision
from ...errors import InterruptedByUser
from ...events import ToolCallFinished, ToolCallStarted
from .._ipython import DisplayHandle, argument, magic_arguments, parse_command
from ..asking.approvals_ui import NO_ONE_TO_ASK
from ..coauthor.link import link_for
from ..coauthor.review import review_approvals
from ..inert import html_bundle, html_text
from ..runtime.bridge import MainThreadBridge
from ..runtime.kernel_comm import unattended_kernel
from ..runtime.services import services
from ..views.call_record import StaticCall
from .serve_token import discard_token, keep_token, shell_read, shown_path
from .tasks import note_interrupted

if TYPE_CHECKING:
    from ..session.session import NotebookSession

T = TypeVar("T")

#: The server's name in the printed configuration lines.
SERVER_NAME = "jupyter"
#: The environment variable the Codex lines read the token from.
CODEX_TOKEN_VARIABLE = "JUPYTER_AGENT_MCP_TOKEN"
#: Calls the serve cell shows at most (the oldest give way, counted).
MAX_SHOWN_CALLS = 100
#: What a queued main-thread call tells its caller while another cell runs.
BUSY_NOTE = "kernel busy, queued: the call runs when the running cell ends"
MISSING_SDK = "%agent serve needs the MCP SDK: pip install 'jupyter-claude-agent[mcp]'"


def connection_lines(url: str, token_file: Path, name: str = SERVER_NAME) -> str:
    """How Claude Code, Codex, the MCP Inspector and a generic ``mcpServers`` client connect to
    ``url``: each line reads the token from ``token_file`` where it is pasted (never shows it)."""
    read = shell_read(token_file)
    variable = "${" + CODEX_TOKEN_VARIABLE + "}"
    entry = {
        "mcpServers": {
            name: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {variable}"}}
        }
    }
    return "\n".join(
        [
            "Claude Code:",
            f'  claude mcp add --transport http {name} {url} --header "Authorization: Bearer '
            f'{read}"',
            "",
            f'Codex (~/.codex/config.toml; start codex with {CODEX_TOKEN_VARIABLE}="{read}" in '
            "its environment):",
            f"  [mcp_servers.{name}]",
            f'  url = "{url}"',
            f'  bearer_token_env_var = "{CODEX_TOKEN_VARIABLE}"',
            "",
            "MCP Inspector:",
            f'  npx @modelcontextprotocol/inspector --cli {url} --transport http --header "'
            f'Authorization: Bearer {read}"',
            "",
            f"Any MCP client (an mcpServers entry, e.g. in .mcp.json; Claude Code fills in "
            f'{variable} from its environment: start it with {CODEX_TOKEN_VARIABLE}="{read}"):',
            "  " + json.dumps(entry),
        ]
    )


class ServeLog:
    """The serve cell's record of calls: static, redrawn in place through its display handle.

    Lives on the main thread (every method runs there).
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.calls: list[StaticCall] = []
        self.dropped = 0
        self.note = "No calls yet: they show here as other agents make them."
        self.ended = False

    def apply(self, events: list[object]) -> None:
        for event in events:
            if isinstance(event, ToolCallStarted):
                self.calls.append(StaticCall(event.call_id, event.name, dict(event.input)))
                if len(self.calls) > MAX_SHOWN_CALLS:
                    self.calls.pop(0)
                    self.dropped += 1
            elif isinstance(event, ToolCallFinished):
                view = self._find(event.call_id)
                if view is not None:
                    view.finish(
                        event.output,
                        is_error=event.is_error,
                        duration_s=event.duration_s,
                        images=event.images,
                        status=event.status,
                    )
            elif isinstance(event, _Waiting):
                view = self._find(event.call_id)
                if view is not None and not view.finished:
                    view.mark("waiting" if event.waiting else "running")
        self.draw()

    def _find(self, call_id: str) -> StaticCall | None:
        for view in reversed(self.calls):
            if view.call_id == call_id:
                return view
        return None

    def bundle(self) -> dict[str, str]:

        head = f"MCP calls from other agents ({self.note})" if not self.calls else ""
        if self.dropped:
            head = f"({self.dropped} earlier calls not shown)"
        html_parts = [f"<div style='color: #666; font-size: 12px;'>{html_text(head)}</div>"]
        html_parts += [call.as_html() for call in self.calls]
        text_parts = [head] if head else []
        text_parts += [call.as_text() for call in self.calls]
        if self.ended and self.calls:
            html_parts.append(f"<div style='color: #666;'>■ {html_text(self.note)}</div>")
            text_parts.append(f"■ {self.note}")
        return html_bundle("".join(html_parts), "\n".join(text_parts))

    def draw(self) -> None:
        self._handle.update(self.bundle(), raw=True)

    def end(self, note: str) -> None:
        for call in self.calls:
            if not call.finished:
                call.mark("interrupted")
        self.note = note
        self.ended = True
        self.draw()


class _Waiting:
    """A call waits for (``waiting``) or has left the approval prompt."""

    def __init__(self, call_id: str, waiting: bool) -> None:
        self.call_id = call_id
        self.waiting = waiting


class KernelServe:
    """One running ``%agent serve``: the MCP server, its cell's displays, the main-thread hook."""

    def __init__(
        self,
        session: NotebookSession,
        shell: Any,
        *,
        port: int,
        tools: list[str] | None,
        task_after: float = 5.0,
    ) -> None:
        from .serve_http import ToolServer

        self._shell = shell
        self._bridge: MainThreadBridge = session.bridge
        self._loop = self._bridge.background.loop
        self.token = secrets.token_urlsafe(32)
        self.server = ToolServer(
            session.toolbox,
            token=self.token,
            tools=tools,
            max_result_chars=session.settings.max_result_chars,
            approval_handler=self._approve,
            on_event=self._post,
            task_after=task_after,
        )
        self._port = port
        self._pending: list[object] = []
        #: Tasks started on the loop and not awaited (held until they end).
        self._tasks: set[asyncio.Task[None]] = set()
        self._drawing = False
        #: A cell other than a ``%%agent`` one is running (main-thread work waits for it).
        self._cell_running = True  # the ``%agent serve`` cell itself, until it ends
        #: Cells the user interrupted while serving (counted on the main thread, when they end).
        self._interrupts = 0
        self._kernel = getattr(self._shell, "kernel", None)
        self._log: ServeLog | None = None
        self._prompt_handle: Any = None
        #: The bridge's idle runner before serving (the kernel loop's), back when it stops.
        self._idle_runner_before: Any = None
        self.stopped = False
        #: The 0600 file that holds the token (``serve_token``); the token is never printed.
        self.token_file: Path | None = None

    @property
    def url(self) -> str:
        """Where MCP clients connect (with ``Authorization: Bearer`` and ``token``)."""
        return self.server.url

    # -- starting and stopping (main thread) -----------------------------------------------------

    def start(self) -> None:
        self._bridge.background.run(self.server.start(self._port), timeout=30)
        try:
            self.token_file = keep_token(self.token, self.server.port)
        except OSError as exc:
            self._bridge.background.run(self.server.stop(), timeout=10)
            raise UsageError(
                f"%agent serve: cannot keep the token in a private file: {exc}"
            ) from None
        atexit.register(self._discard_token)  # the kernel shuts down without a stop
        self._idle_runner_before = self._bridge.idle_runner
        self._bridge.idle_runner = self._between_cells
        # the kernel's Stop ended a served task's own code (between cells or in a %%agent
        # cell's pump): the task reads cancelled, not completed with an error result
        self._bridge.on_interrupted = note_interrupted
        link = link_for(self._shell)
        if link is not None:  # served calls work in the page that ran this cell
            link.serve_from(True)
        events = getattr(self._shell, "events", None)
        if events is not None:
            events.register("pre_run_cell", self._cell_starts)
            events.register("post_run_cell", self._cell_ends)

    def show(self) -> None:
        """Print the connection lines, then the displays later calls update."""
        offered = self.server.offered()
        assert self.token_file is not None
        print(
            f"Serving {len(offered)} tools of this kernel over MCP at {self.server.url} "
            f"(listening on {', '.join(self.server.addresses)} only, for your own user's "
            "processes; every request needs the token kept in\n"
            f"  {shown_path(self.token_file)}\n"
            "a file only you can read — it is never shown here, so it is not saved with the "
            "notebook). %agent serve stop ends it.\n"
        )
        print(connection_lines(self.server.url, self.token_file))
        print(f"\nTools: {', '.join(offered) or 'none (enable some with %agent_tools)'}")
        disabled = [name for name in self.server.only or () if name not in offered]
        if disabled:
            print(
                f"Not offered while disabled: {', '.join(disabled)} "
                f"(%agent_tools enable {' '.join(disabled)})"
            )
        log_handle = DisplayHandle()
        self._log = ServeLog(log_handle)
        log_handle.display(self._log.bundle(), raw=True)
        self._prompt_handle = DisplayHandle()
        self._prompt_handle.display({"text/plain": ""}, raw=True)

    def status(self) -> str:
        state = "running" if self.server.running else "stopped"
        return (
            f"%agent serve: {state} at {self.server.url} ({self.server.calls} calls so far; "
            f"tools: {', '.join(self.server.offered()) or 'none'}). %agent serve stop ends it."
        )

    def stop(self, note: str = "stopped") -> None:
        if self.stopped:
            return
        self.stopped = True
        if self._bridge.idle_runner == self._between_cells:
            self._bridge.idle_runner = self._idle_runner_before
        if self._bridge.on_interrupted is note_interrupted:
            self._bridge.on_interrupted = None
        link = link_for(self._shell)
        if link is not None:
            link.serve_from(False)
        events = getattr(self._shell, "events", None)
        if events is not None:
            for name, callback in (
                ("pre_run_cell", self._cell_starts),
                ("post_run_cell", self._cell_ends),
            ):
                with contextlib.suppress(ValueError):
                    events.unregister(name, callback)
        background = self._bridge.background
        if not background.closed:
            with contextlib.suppress(Exception):
                background.run(self.server.stop(), timeout=10)
        atexit.unregister(self._discard_token)
        self._discard_token()
        if self._log is not None:
            with contextlib.suppress(Exception):
                self._log.end(f"the server was {note}")

    def _discard_token(self) -> None:
        discard_token(self.token, self.token_file)

    def _cell_starts(self, *_args: Any) -> None:
        self._cell_running = True

    def _cell_ends(self, result: Any = None, *_args: Any) -> None:
        self._cell_running = False
        if isinstance(getattr(result, "error_in_exec", None), KeyboardInterrupt):
            # the user stopped the kernel: the calls queued behind that cell end too. Counted
            # here, on the main thread, before the kernel's loop can reach their queued work
            # (which then refuses to run): the cancel below reaches the server's loop later.
            self._interrupts += 1
            self._loop.call_soon_threadsafe(
                self.server.tasks.cancel_all, "the kernel was interrupted in the notebook"
            )

    # -- the main thread, from the background loop -----------------------------------------------

    async def _between_cells(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the kernel's main thread between cells (the bridge's idle runner)."""
        from ..runtime.kernel_loop import kernel_loop_runner
        from .serve_http import report_progress

        on_kernel_loop = kernel_loop_runner(self._shell)
        if on_kernel_loop is None:
            raise RuntimeError("this needs a Jupyter kernel's main thread (not available here)")
        if self._cell_running:
            await report_progress(BUSY_NOTE)
        interrupts = self._interrupts

        def unless_interrupted() -> T:  # on the main thread, once the kernel gets to it
            if self._interrupts != interrupts:  # the cell it waited behind was interrupted
                raise InterruptedByUser("interrupted by the user before it ran")
            return fn()

        result: T = await on_kernel_loop(unless_interrupted)
        return result

    def _post(self, event: object) -> None:
        """Queue ``event`` for the serve cell's record (called on the background loop)."""
        self._pending.append(event)
        if not self._drawing:
            self._drawing = True
            self._spawn(self._draw())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _draw(self) -> None:
        """Hand the queued events to the main thread, in order, a batch at a time."""
        try:
            while self._pending and self._log is not None:
                batch, self._pending = self._pending, []
                apply = functools.partial(self._log.apply, batch)
                with contextlib.suppress(Exception):  # a display that failed: the next one
                    await self._bridge.call_on_main(apply)
        finally:
            self._drawing = False

    # -- approvals -----------------------------------------------------------------------------

    async def _approve(self, request: ApprovalRequest) -> Decision:
        """The approval handler: asked as the notebook's own agent's calls are asked
        (``review_approvals``: ``run_cell`` shows the source that will run and the kernel runs
        exactly that, ``edit_cell`` is a diff in the cell), the prompt in the serve cell. The
        gate decides and the tool runs in the call's one task, so the pinned source is this
        call's alone; the page is ``NotebookLink.served_page()``."""
        if unattended_kernel(self._shell) or getattr(self._shell, "kernel", None) is None:
            return Decision(False, NO_ONE_TO_ASK)
        return await review_approvals(self._ask, self._shell, self._bridge)(request)

    async def _ask(self, request: ApprovalRequest) -> Decision:
        """A prompt in the serve cell, answered by a click."""
        if unattended_kernel(self._shell) or getattr(self._shell, "kernel", None) is None:
            return Decision(False, NO_ONE_TO_ASK)
        loop = asyncio.get_running_loop()
        clicked: asyncio.Future[None] = loop.create_future()

        def settle_click() -> None:
            if not clicked.done():
                clicked.set_result(None)

        def answered(_button: Any = None) -> None:
            loop.call_soon_threadsafe(settle_click)

        def show() -> Any:
            from ..views.widgets.approval_prompt import ApprovalPrompt

            prompt = ApprovalPrompt(request)
            prompt.session_button.tooltip = (
                "Don't ask again this session for calls from this client (other agents and the "
                "notebook's own agent still ask)"
            )
            for button in (prompt.approve_button, prompt.session_button, prompt.deny_button):
                button.on_click(answered)
            self._prompt_handle.update(prompt)
            return prompt

        self._post(_Waiting(request.call_id, True))
        prompt = await self._bridge.call_on_main(show)
        try:
            await clicked
        finally:
            self._post(_Waiting(request.call_id, False))
            self._spawn(self._settle(prompt))
        decision: Decision | None = prompt.decision
        return decision if decision is not None else Decision(False, "no answer")

    async def _settle(self, prompt: Any) -> None:
        """The answered (or abandoned) prompt leaves its one line; its widgets close."""
        handle = self._prompt_handle

        def settle() -> None:
            if prompt.decision is None:
                prompt.decide(Decision(False, "the call was abandoned"))
            handle.update(prompt.static_bundle(), raw=True)
            prompt.close_all()

        with contextlib.suppress(Exception):
            await self._bridge.call_on_main(settle)


# -- %agent serve -----------------------------------------------------------------------------


@magic_arguments("agent serve")
@argument(
    "action",
    nargs="?",
    choices=["stop", "status"],
    default=None,
    help="stop: end the server; status: show it (also what a second %%agent serve does).",
)
@argument("--port", type=int, default=0, help="The port (default: a free one).")
@argument(
    "--tools",
    default=None,
    metavar="NAME,...",
    help="Offer only these tools (default: every enabled tool).",
)
def serve_command(
    session: NotebookSession, shell: Any, rest: str, *, task_after: float = 5.0
) -> None:
    """Serve ``session``'s tools to other agents over MCP (loopback, with a token); the running
    server is one of ``shell``'s services. A call outliving ``task_after`` seconds becomes a
    task for a client that speaks MCP's tasks extension."""
    args = parse_command(serve_command, rest)
    owner = services(shell)
    if owner is None:
        raise UsageError("%agent serve needs an IPython shell")
    running: KernelServe | None = owner.server
    if running is not None and running.stopped:
        running = None
    if args.action == "stop":
        if running is None:
            print("%agent serve: no server is running.")
            return
        running.stop()
        owner.server = None
        print(f"%agent serve: stopped ({running.server.url} no longer answers).")
        return
    if args.action == "status" or running is not None:
        print(running.status() if running is not None else "%agent serve: no server is running.")
        return
    try:
        import mcp  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise UsageError(MISSING_SDK) from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"%agent serve: --port must be 0..65535, not {args.port}")
    tools = _tool_names(session, args.tools)
    serve = KernelServe(session, shell, port=args.port, tools=tools, task_after=task_after)
    try:
        serve.start()
    except OSError as exc:
        raise UsageError(f"%agent serve: cannot listen on port {args.port}: {exc}") from None
    owner.server = serve
    serve.show()


def _tool_names(session: NotebookSession, text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    registry = session.registry
    unknown = [name for name in names if not registry.has_tool(name)]
    if unknown:
        raise UsageError(
            f"%agent serve: unknown tool(s) {', '.join(unknown)}; the tools are: "
            f"{', '.join(registry.get_tool_names())}"
        )
    return names


def serve_running(shell: Any) -> KernelServe | None:
    """``shell``'s running ``%agent serve``, if any."""
    owner = services(shell)
    return None if owner is None else owner.server


def stop_serving(shell: Any, note: str = "stopped") -> None:
    """End ``shell``'s server, if one runs (``%unload_ext``, the session's end)."""
    owner = services(shell)
    running: KernelServe | None = None if owner is None else owner.server
    if owner is not None and running is not None:
        running.stop(note)
        owner.server = None
