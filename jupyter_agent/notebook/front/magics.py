"""``AgentMagics``: ``%%agent``, ``%agent`` and ``%agent_tools`` — the front end of a session.

What a session *is* (its chats, providers, usage, journal) lives in ``session.py``, free of
IPython; this class turns lines into calls on it and its events into output. The settings are
traitlets (``%config AgentMagics.model = "claude-..."``) that forward every change to the
session. Arguments are parsed with ``magic_arguments`` (so ``%%agent?`` and ``%agent?`` show
them); ``SUBCOMMANDS`` maps each ``%agent WORD`` to its method; every user mistake is a one-line
``UsageError``.
"""

from __future__ import annotations

import contextlib
import functools
import shlex
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from traitlets import Bool, Dict, Enum, Float, Int, List, TraitError, Unicode, observe, validate

from ...errors import SessionError
from .._ipython import (
    argument,
    display,
    line_cell_magic,
    magic_arguments,
    parse_argstring,
    parse_command,
)
from ..asking.approvals_ui import NotebookApprovals
from ..inert import InertMarkdown, visible
from ..replay.cell_replay import CellReplay, replay_command
from ..runtime.bridge import DEFAULT_RENDER_INTERVAL_S, MainThreadBridge
from ..runtime.kernel_comm import KernelCommPoller
from ..runtime.subshell import subshell_id
from ..runtime.turn_gc import TurnGC
from ..session.managed import MANAGED_TRAITS, ManagedSettings
from ..session.prompt_redaction import redacted_prompt
from ..session.settings import DEFAULT_CHAT, PROVIDER_KINDS, SETTING_NAMES, SessionSettings
from ..spend.pricing import user_prices
from .ask_beside import ask_command, beside_cell
from .cell_errors import LastError, error_prompt
from .cell_turn import CellTurn
from .live_panel import LivePanel
from .magic_types import (
    EFFORT_CHOICES,
    chat_name,
    dollars,
    identifier,
    positive_int,
    think,
    thinking_budget,
    unquoted,
)
from .output import say
from .tools_commands import TOOLS_COMMANDS, ToolsOwner, print_tools
from .turn_options import DEFAULT_TURN, TurnOptions

if TYPE_CHECKING:
    from ...agent.agent import Agent
    from ..asking.user_questions import UserQuestions
    from ..session.session import NotebookSession
    from ..session.turn_transcript import TurnOutcome
    from .mcp_commands import MCPCommands
    from .plan_mode import PendingPlan

_DEFAULTS = SessionSettings()

INTERRUPTED_NOTE = "■ Interrupted. The conversation keeps what happened so far; run %%agent again."


def _show_link(text: str, url: str) -> None:
    """A link in the running cell (an MCP server's Authorize page): inert markup, the URL as
    text beside it, for a terminal or a frontend that does not open links."""
    from .._ipython import display
    from ..inert import html_bundle, html_text

    markup = (
        f'<div style=\'margin: 4px 0;\'><a href="{html_text(url)}" target="_blank">'
        f"{html_text(text)}</a></div>"
    )
    display(html_bundle(markup, f"{text}: {url}"), raw=True)


@contextlib.contextmanager
def _as_usage_errors() -> Iterator[None]:
    """A session's refusal reaches the user as a one-line ``UsageError``."""
    try:
        yield
    except SessionError as exc:
        raise UsageError(visible(str(exc))) from None


@magics_class
class AgentMagics(Magics):
    """Talk to a Claude agent from notebook cells."""

    # -- settings: the session's (forwarded by _on_session_setting) ---------------------------
    provider = Enum(
        list(PROVIDER_KINDS),
        default_value=_DEFAULTS.provider,
        help="Which model serves the agent. 'auto': Claude when ANTHROPIC_API_KEY is set, "
        "else the offline demo model.",
    ).tag(config=True)
    model = Unicode(_DEFAULTS.model, help="Model name; empty for the provider's default.").tag(
        config=True
    )
    workspace = Unicode(
        _DEFAULTS.workspace, help="Folder the agent's file tools work in; empty: the notebook's."
    ).tag(config=True)
    # ``min``: a bad %config value is refused before it is set (an observer raising would be
    # too late: the value would stick and break the next cell).
    max_turns = Int(_DEFAULTS.max_turns, min=1, help="Model turns one %%agent cell may take.").tag(
        config=True
    )
    system_prompt = Unicode(_DEFAULTS.system_prompt, help="The agent's system prompt.").tag(
        config=True
    )
    offline_cassette = Unicode(
        _DEFAULTS.offline_cassette,
        help="A recorded session (JSON cassette) for the offline model to replay.",
    ).tag(config=True)
    web_allow = List(
        Unicode(),
        help="Hosts web_fetch may reach without asking ('*.example.com' covers its subdomains); "
        "any other host is asked about once per session.",
    ).tag(config=True)
    allow_private_network = Bool(
        _DEFAULTS.allow_private_network,
        help="Let web_fetch reach loopback and private addresses (your own services).",
    ).tag(config=True)
    shell_network = Bool(
        _DEFAULTS.shell_network,
        help="Give run_bash's sandbox the network (pip install, curl); off by default, so a "
        "command can neither reach the kernel's ports nor send what it read.",
    ).tag(config=True)
    variable_budget = Int(
        _DEFAULTS.variable_budget,
        min=0,
        help="Characters of {{variable}} summaries one prompt may carry.",
    ).tag(config=True)
    prices = Dict(
        {},
        help="Your own prices in dollars per million tokens, by model name or prefix: "
        "{'my-model': {'input': 1, 'output': 5}} (optional 'cache_write', 'cache_read'); they "
        "override the built-in list prices in %agent usage.",
    ).tag(config=True)
    tool_timeout = Float(
        _DEFAULTS.tool_timeout,
        allow_none=True,
        help="Seconds one tool call may run before it is cancelled (None: no limit).",
    ).tag(config=True)
    max_result_chars = Int(
        _DEFAULTS.max_result_chars,
        allow_none=True,
        min=1000,
        help="The longest tool result the model sees, in characters; longer ones are cut in the "
        "middle, marked (None: no cap).",
    ).tag(config=True)
    context_window = Int(
        _DEFAULTS.context_window,
        allow_none=True,
        min=1000,
        help="The model's context window in tokens; the conversation is compacted to fit "
        "(None: the model's documented window).",
    ).tag(config=True)
    max_parallel_tools = Int(
        _DEFAULTS.max_parallel_tools,
        min=1,
        help="Tool calls of one reply that run at the same time (the others wait their turn).",
    ).tag(config=True)
    thinking_budget = Int(
        _DEFAULTS.thinking_budget,
        allow_none=True,
        help="Tokens Claude may think before answering (at least 1024; None: off). On a model "
        "that takes no budget, adaptive thinking at a matching effort. %%agent --think N sets "
        "it for one cell.",
    ).tag(config=True)
    effort = Unicode(
        _DEFAULTS.effort,
        allow_none=True,
        help="Claude's effort: low, medium, high, xhigh or max (None: the model's default; a "
        "level the model lacks becomes its nearest). %%agent --effort sets it for one cell.",
    ).tag(config=True)

    budget = Float(
        _DEFAULTS.budget,
        allow_none=True,
        min=0.0,
        help="Dollars one %%agent cell may spend on the model (None: no cap); the turn stops "
        "before a request that could pass it. %%agent --budget 0.50 sets it for one cell.",
    ).tag(config=True)
    session_budget = Float(
        _DEFAULTS.session_budget,
        allow_none=True,
        min=0.0,
        help="Dollars the whole session may spend on the model (None: no cap); %agent usage "
        "shows what is spent and left.",
    ).tag(config=True)

    # -- settings: the front end's own ---------------------------------------------------------
    mcp_servers = Dict(
        {},
        help="MCP servers in the shared mcpServers shape: {'name': {'command': ..., 'args': [...], "
        "'env': {...}}} or {'name': {'url': ...}}, plus an optional 'policy' (default 'ask'); "
        "connected on first use. See %agent mcp.",
    ).tag(config=True)

    render_interval = Float(
        DEFAULT_RENDER_INTERVAL_S,
        min=0.0,
        help="Seconds between two updates of a streaming answer.",
    ).tag(config=True)
    serve_task_after = Float(
        5.0,
        min=0.0,
        help="Seconds a call through %agent serve runs before it becomes an MCP task the client "
        "polls (for clients that speak tasks; run_cell and run_python always do).",
    ).tag(config=True)
    replay = Bool(
        True,
        help="Replay a re-run %%agent cell's recorded turn (same prompt and options) without a "
        "model request; %%agent --fresh or %agent replay off asks the model.",
    ).tag(config=True)
    ui = Enum(
        ["auto", "widgets", "text"],
        default_value="auto",
        help="'widgets' in Jupyter, 'text' in terminal IPython; 'auto' picks by the shell.",
    ).tag(config=True)

    def __init__(
        self, shell: Any = None, *, managed: ManagedSettings | None = None, **kwargs: Any
    ) -> None:
        # Before super().__init__: loading the shell's config fires _on_session_setting, and
        # _check_managed (an admin's locks: managed.py; the system's file unless given).
        self._session: NotebookSession | None = None
        self.managed = managed if managed is not None else ManagedSettings.load()
        self._configured = False
        for problem in self.managed.problems:
            say(problem, error=True)
        super().__init__(shell=shell, **kwargs)
        current = {name: getattr(self, name) for name in MANAGED_TRAITS}
        for name, value in self.managed.initial(current, self.config).items():
            setattr(self, name, value)
        self._configured = True
        self.last_error = LastError()
        self._approvals: NotebookApprovals | None = None
        #: The running cell's turn (its renderer, Stop, poller), while a turn runs.
        self._turn: CellTurn | None = None
        #: The live ``%agent_tools`` panel and its display handle (one at a time).
        self._panel = LivePanel(shell)
        #: The plan a %%agent --plan cell made, until %agent go carries it out.
        self._pending_plan: PendingPlan | None = None
        self._mcp_commands: MCPCommands | None = None

    @property
    def server(self) -> Any:
        """The running ``%agent serve`` (``serve.py``), if any: one of the shell's services."""
        from ..serve.serve import serve_running

        return serve_running(self.shell)

    @property
    def session(self) -> NotebookSession:
        """The notebook session this front end drives, built on first use (with the settings).

        Built lazily so that ``%load_ext`` imports no more than registering the magics needs.
        """
        if self._session is None:
            from ..session.session import NotebookSession

            settings = SessionSettings(**{name: getattr(self, name) for name in SETTING_NAMES})
            self._session = NotebookSession(
                settings,
                namespace=getattr(self.shell, "user_ns", None),
                shell=self.shell,
                approvals=self._make_approvals,
                questions=self._make_questions,
                show_link=_show_link,
            )
            self._session.on_rebuild.append(self._rebind_panel)
            self._session.on_rebuild.append(lambda primary: self.managed.install(primary.toolbox))
            self._session.egress.limit = self.managed.host_refusal
            from ..runtime.kernel_loop import kernel_loop_runner

            # a server's form or approval outside a turn (a tool called from a code cell)
            self._session.bridge.idle_runner = kernel_loop_runner(self.shell)
        return self._session

    @validate("prices")
    def _check_prices(self, proposal: dict[str, Any]) -> dict[str, Any]:
        try:
            user_prices(proposal["value"])
        except ValueError as exc:
            raise TraitError(str(exc)) from None
        return dict(proposal["value"])

    @validate("tool_timeout")
    def _check_tool_timeout(self, proposal: dict[str, Any]) -> float | None:
        value = proposal["value"]
        if value is not None and value <= 0:
            raise TraitError("tool_timeout must be a positive number of seconds, or None")
        return value  # type: ignore[no-any-return]

    @validate("effort")
    def _check_effort(self, proposal: dict[str, Any]) -> str | None:
        value = proposal["value"]
        if value is not None and value not in EFFORT_CHOICES:
            raise TraitError(f"effort must be one of {', '.join(EFFORT_CHOICES)}, or None")
        return value  # type: ignore[no-any-return]

    @validate("thinking_budget")
    def _check_thinking_budget(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        return thinking_budget(value) if value is not None else None

    @validate(*MANAGED_TRAITS)
    def _check_managed(self, proposal: dict[str, Any]) -> Any:
        """A value looser than the managed settings: refused in one line (``%config``), or,
        from a config file read at load, replaced by the managed value with that line."""
        name, value = proposal["trait"].name, proposal["value"]
        refused = self.managed.check(name, value)
        if refused is None:
            return value
        if self._configured:
            raise TraitError(refused)
        say(f"jupyter-agent: {refused.replace('nothing was changed', 'the managed value is used')}")
        return self.managed.clamp(name, value)

    @observe(*SETTING_NAMES)
    def _on_session_setting(self, change: dict[str, Any]) -> None:
        if self._session is not None:  # else it starts with the traits' values
            self._session.configure(**{change["name"]: change["new"]})

    # -- what notebooks and the README use ---------------------------------------------------

    @property
    def agent(self) -> Agent:
        """The default chat's ``Agent`` (created on first use)."""
        with _as_usage_errors():
            return self.session.agent

    @property
    def bridge(self) -> MainThreadBridge:
        """The session's bridge to its background loop (where the agent and its tools run)."""
        return self.session.bridge

    def use_provider(self, provider: Any) -> None:
        """Serve the agent from ``provider`` (until a provider/model setting changes).

        The hook for providers the settings can't describe, such as an ``AnthropicProvider``
        with a client of your own (a proxy, a custom transport).
        """
        self.session.use_provider(provider)

    def close(self) -> None:
        """End the MCP servers, release the providers' connections, stop the background loop."""
        self._panel.retire("(the extension was unloaded)")
        from ..serve.serve import stop_serving

        stop_serving(self.shell, "stopped: the extension was unloaded")
        if self._session is not None:
            self._session.close()
        self._mcp_commands = None

    @property
    def mcp(self) -> MCPCommands:
        """The ``%agent mcp`` commands; servers run on the session's background loop."""
        if self._mcp_commands is None:
            from .mcp_commands import MCPCommands

            self._mcp_commands = MCPCommands(self._run_pumped)
        return self._mcp_commands

    def _run_pumped(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the session's loop while the main thread pumps: what it shows (an
        MCP server's Authorize link, a form) reaches this cell, and an interrupt ends it."""
        outcome = self.session.bridge.run(coro, lambda _event: None)
        if outcome.interrupted:
            raise UsageError("Interrupted; nothing was changed")
        return outcome.value

    def _connect_mcp_servers(self) -> None:
        """Connect the ``mcp_servers`` entries not tried yet (first use, or after a change)."""
        if not self.mcp_servers:
            return
        for problem in self.mcp.connect_configured(self.session.toolbox, self.mcp_servers):
            say(problem, error=True)

    def use_widgets(self) -> bool:
        if self.ui != "auto":
            return bool(self.ui == "widgets")
        return getattr(self.shell, "kernel", None) is not None

    # -- the session's hooks -----------------------------------------------------------------

    def _make_approvals(self, bridge: MainThreadBridge) -> NotebookApprovals:
        self._approvals = NotebookApprovals(
            bridge, self.shell, use_widgets=self.use_widgets, on_waiting=self._mark_waiting
        )
        return self._approvals

    def _make_questions(self, bridge: MainThreadBridge) -> UserQuestions:
        from ..asking.user_questions import UserQuestions

        def running_poller() -> KernelCommPoller | None:
            return self._approvals.poller if self._approvals is not None else None

        return UserQuestions(
            bridge, self.shell, use_widgets=self.use_widgets, poller=running_poller
        )

    def _mark_waiting(self, call_id: str, waiting: bool) -> None:
        if self._turn is not None:
            self._turn.mark_waiting(call_id, waiting)

    def _rebind_panel(self, _primary: Agent) -> None:
        self._panel.rebind(self.session)

    # -- one turn, rendered ------------------------------------------------------------------

    def _run_turn(
        self,
        prompt: str,
        options: TurnOptions = DEFAULT_TURN,
        gc: TurnGC | None = None,
        replay: CellReplay | None = None,
    ) -> TurnOutcome:
        """One turn of ``options.chat`` shown in this cell: its wiring is a ``CellTurn``
        (``gc``: the cell's scope, begun before its setup; else one begun here)."""
        provider, model = options.provider, options.model
        scope = gc if gc is not None else TurnGC()
        with scope:
            with _as_usage_errors():  # refusals before anything is shown
                settings = vars(self.session.settings)
                self.managed.check_turn(settings, provider, model, options.budget)
                self.session.chat(options.chat)
                self.session.provider(provider, model, options.think, options.effort)
            self._turn = CellTurn(
                self.session,
                self.shell,
                rich=self.use_widgets(),
                render_interval=self.render_interval,
                approvals=self._approvals,
                gc=scope,
            )
            self.session.wrap_provider = replay.wrap if replay is not None else None
            try:
                outcome = self._turn.run(prompt, options)
                if replay is not None:  # the turn's record goes with its answer (replay/)
                    replay.finish(outcome.answer is not None, self._turn.renderer)
            finally:
                self._turn = None
                self.session.wrap_provider = None
        if outcome.interrupted:
            say(INTERRUPTED_NOTE)
        return outcome

    # -- %%agent -----------------------------------------------------------------------------

    @magic_arguments("%agent")  # the usage line reads "%%agent [--model MODEL] ..."
    @argument("--model", "-m", default=None, type=unquoted, help="Model for this cell only.")
    @argument(
        "--provider",
        "-p",
        default=None,
        choices=PROVIDER_KINDS,
        help="Provider for this cell only: auto, anthropic, offline or openai.",
    )
    @argument(
        "--chat",
        "-c",
        default=DEFAULT_CHAT,
        type=chat_name,
        help="The conversation to continue (created on first use); default: 'default'.",
    )
    @argument("--new", action="store_true", help="Empty this chat's conversation first.")
    @argument(
        "--fresh", action="store_true", help="Ask the model even if a recorded turn could replay."
    )
    @argument(
        "--plan",
        action="store_true",
        help="Plan first: read-only tools, the answer is a plan; %%agent go carries it out.",
    )
    @argument("--max-turns", type=positive_int, default=None, help="Model turns for this cell.")
    @argument(
        "--think",
        type=think,
        default=None,
        metavar="N",
        help="Let Claude think up to N tokens first, for this cell (on a model without "
        "budgets: adaptive thinking at a matching effort).",
    )
    @argument(
        "--effort",
        choices=EFFORT_CHOICES,
        default=None,
        help="Claude's effort for this cell (the model's nearest level if it lacks this one).",
    )
    @argument(
        "--budget",
        type=dollars,
        default=None,
        metavar="DOLLARS",
        help="Spend at most this much on the model in this cell (e.g. 0.50).",
    )
    @argument(
        "--system",
        default=None,
        type=unquoted,
        help="Replace the system prompt (from this cell on).",
    )
    @argument("--out", default=None, type=identifier, help="Store the answer in this variable.")
    @line_cell_magic("agent")
    def agent_magic(self, line: str, cell: str | None = None) -> None:
        """Ask the agent: the cell body is the prompt; the chat's conversation carries over.

        In the prompt, {{name}} brings in a summary of the kernel variable name.

        Line form (housekeeping): %agent reset [NAME], %agent chats, %agent history [NAME],
        %agent usage, %agent error, %agent compact, %agent undo, %agent save PATH,
        %agent load PATH, %agent config, %agent model [NAME], %agent go (after --plan),
        %agent mcp add|list|remove, %agent serve (listed below).
        """
        if cell is None:
            self._subcommand(line)
            return None
        args = parse_argstring(self.agent_magic, line)
        prompt = cell.strip()
        if not prompt:
            raise UsageError("%%agent needs a prompt: write it in the cell below the %%agent line")
        if subshell_id(self.shell) is not None:  # beside a running cell: read-only tools
            beside_cell(self, prompt, args)
            return None
        # the turn's freeze of the older heap begins before its setup: a fresh kernel's first
        # cell imports the session, the agent, the SDK and the widgets here, and full
        # collections those imports set off would walk the whole heap (``turn_gc.py``)
        with TurnGC() as scope:
            with _as_usage_errors():
                agent = self.session.chat(args.chat)
                self._connect_mcp_servers()
                if args.new:
                    agent.clear_context()
                if args.system is not None:
                    self.system_prompt = args.system
                expanded = self.session.expand(prompt)
            options = TurnOptions(
                chat=args.chat,
                provider=args.provider,
                model=args.model,
                max_turns=args.max_turns,
                think=args.think,
                budget=args.budget,
                effort=args.effort,
            )
            replay = None
            if not args.plan:  # a recorded turn replays, or this one is kept (replay/)
                replay = CellReplay.for_cell(
                    self.shell,
                    prompt,
                    expanded,
                    args,
                    enabled=self.replay,
                    notify=say,
                    spent=self.session.spent,
                )
            turn = functools.partial(self._run_turn, options=options, gc=scope, replay=replay)
            outcome = self._plan_turn(expanded, args.chat, turn) if args.plan else turn(expanded)
        if args.out is not None and outcome.answer is not None and self.shell is not None:
            self.shell.user_ns[args.out] = outcome.answer
        return None

    def _plan_turn(self, prompt: str, chat: str, turn: Callable[[str], TurnOutcome]) -> TurnOutcome:
        """``%%agent --plan``: the turn with read-only tools; a plan then waits for Go."""
        from .plan_mode import PendingPlan, plan_prompt, read_only_tools, show_go

        with _as_usage_errors():
            registry = self.session.registry
        with read_only_tools(registry):
            outcome = turn(plan_prompt(prompt))
        if outcome.answer is not None and not outcome.interrupted:
            self._pending_plan = PendingPlan(chat)
            show_go(self.shell, self._pending_plan)
        return outcome

    # -- %agent COMMAND ----------------------------------------------------------------------

    def _subcommand(self, line: str) -> None:
        words = line.strip().split(None, 1)
        commands = ", ".join(self.SUBCOMMANDS)
        if not words:
            raise UsageError(f"%agent needs a command: {commands} (use %%agent for a prompt)")
        handler = self.SUBCOMMANDS.get(words[0])
        if handler is None:
            raise UsageError(
                f"Unknown %agent command {words[0]!r}; use one of: {commands} "
                "(to ask the agent, use a %%agent cell)"
            )
        with _as_usage_errors():
            handler(self, words[1] if len(words) > 1 else "")

    @magic_arguments("agent reset")
    @argument(
        "name",
        nargs="?",
        default=None,
        type=chat_name,
        metavar="NAME",
        help="The chat; all when omitted.",
    )
    def _reset(self, rest: str) -> None:
        """Empty a conversation: the chat's next %%agent cell starts afresh."""
        args = parse_command(self._reset, rest)
        cleared = self.session.reset(args.name)
        if args.name is None and len(cleared) > 1:
            say(f"Cleared every chat ({', '.join(cleared)}); the next %%agent cell starts anew.")
        else:
            say("The conversation was cleared; the next %%agent cell starts a new one.")

    @magic_arguments("agent chats")
    def _chats(self, rest: str) -> None:
        """List the conversations: name, messages, tokens used."""
        parse_command(self._chats, rest)
        chats = self.session.chats()
        if not chats:
            say("No chats yet: the first %%agent cell starts 'default'.")
            return
        width = max(len("chat"), *(len(chat.name) for chat in chats))
        lines = [f"{'chat'.ljust(width)}  {'messages':>8}  {'input':>9}  {'output':>9}"]
        for chat in chats:
            lines.append(
                f"{chat.name.ljust(width)}  {chat.messages:>8}  {chat.usage.input_tokens:>9}  "
                f"{chat.usage.output_tokens:>9}"
            )
        lines.append("input, output: tokens this chat sent to and received from the model")
        say("\n".join(lines))

    @magic_arguments("agent history")
    @argument(
        "name", nargs="?", default=DEFAULT_CHAT, type=chat_name, metavar="NAME", help="The chat."
    )
    def _history(self, rest: str) -> None:
        """Show a conversation as a transcript."""
        args = parse_command(self._history, rest)
        agent = self.session.existing_chat(args.name)
        if not agent.messages:
            say("(the conversation is empty)")
            return
        display(InertMarkdown(agent.session_context, kind="history"))

    @magic_arguments("agent usage")
    def _usage(self, rest: str) -> None:
        """Tokens and estimated cost per model, for this session."""
        parse_command(self._usage, rest)
        say(self.session.usage_report())

    @magic_arguments("agent error")
    @argument("--chat", "-c", default=DEFAULT_CHAT, type=chat_name, help="The chat to ask.")
    def _error(self, rest: str) -> None:
        """Send the last exception (its cell and traceback) to the agent to explain and fix."""
        args = parse_command(self._error, rest)
        failed = self.last_error.last()
        if failed is None:
            raise UsageError("No error yet: %agent error explains the last exception a cell raised")
        self._run_turn(redacted_prompt(error_prompt(failed), say), TurnOptions(chat=args.chat))

    @magic_arguments("agent go")
    @argument(
        "--plan",
        default=None,
        metavar="NONCE",
        help="The plan's Go button sends its nonce: run the plan only if it is that one.",
    )
    def _go(self, rest: str) -> None:
        """Carry out the plan the last %%agent --plan cell made, with the normal tools."""
        from .plan_mode import GO_PROMPT

        args = parse_command(self._go, rest)
        plan = self._pending_plan
        if plan is None:
            raise UsageError("No plan to carry out: a %%agent --plan cell makes one first")
        if args.plan is not None and not plan.is_this(args.plan):
            raise UsageError(
                "%agent go --plan: this Go button is not the pending plan's (an older plan's, or "
                "not shown by this kernel); nothing was run"
            )
        self._pending_plan = None
        self._run_turn(GO_PROMPT, TurnOptions(chat=plan.chat))

    @magic_arguments("agent compact")
    @argument(
        "name", nargs="?", default=DEFAULT_CHAT, type=chat_name, metavar="NAME", help="The chat."
    )
    def _compact(self, rest: str) -> None:
        """Shorten a conversation now: old tool results become stubs, old turns a summary."""
        args = parse_command(self._compact, rest)
        compacted = self.session.compact(args.name)
        if compacted is None:
            say(f"Nothing to compact in chat {args.name!r}.")
        else:
            done = "; ".join(compacted.actions())
            say(
                f"Compacted chat {args.name!r}: about {compacted.tokens_before:,} → "
                f"{compacted.tokens_after:,} tokens" + (f" ({done})." if done else ".")
            )

    def _mcp(self, rest: str) -> None:
        """%agent mcp add NAME [...] -- COMMAND ARGS... | add NAME --url URL | list | remove NAME

        MCP servers (each subcommand's ``magic_arguments`` parser is in ``mcp_commands.py``:
        the words after ``--`` are the server's command line, left as typed).
        """
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            raise UsageError(f"%agent mcp: {exc}") from None
        if words[:1] == ["add"]:
            from .mcp_commands import parse_add

            config = parse_add(words[1:])
            self.managed.refuse(self.managed.check_mcp_server(config.name, config))
        toolbox = self.session.toolbox
        self._connect_mcp_servers()
        say(self.mcp.command(toolbox, words))

    def _serve(self, rest: str) -> None:
        """%agent serve [--port N] [--tools NAME,...] | stop | status — MCP for other agents

        This kernel's tools as an MCP server on loopback, for Claude Code, Codex or any MCP
        client (``serve.py``; its own parser).
        """
        from ..serve.serve import serve_command

        if rest.split()[:1] not in (["stop"], ["status"]):
            self.managed.refuse(self.managed.check_serve())
        serve_command(self.session, self.shell, rest, task_after=self.serve_task_after)

    @magic_arguments("agent undo")
    def _undo(self, rest: str) -> None:
        """Restore the files the last %%agent cell changed through the file tools."""
        parse_command(self._undo, rest)
        say(self.session.undo())

    @magic_arguments("agent save")
    @argument("path", metavar="PATH", help="The JSON file to write.")
    @argument("--chat", "-c", default=DEFAULT_CHAT, type=chat_name, help="The chat to save.")
    def _save(self, rest: str) -> None:
        """Save a conversation to a file (%agent load brings it back)."""
        args = parse_command(self._save, rest)
        count = self.session.save(args.path, args.chat)
        say(f"Saved {count} messages to {args.path}")

    @magic_arguments("agent load")
    @argument("path", metavar="PATH", help="A file written by %agent save.")
    @argument("--chat", "-c", default=DEFAULT_CHAT, type=chat_name, help="The chat to fill.")
    @argument(
        "--system-prompt",
        action="store_true",
        help="Also use the saved system prompt (for every chat) instead of the session's.",
    )
    def _load(self, rest: str) -> None:
        """Replace a chat's conversation with a saved one."""
        args = parse_command(self._load, rest)
        count = self.session.load(args.path, args.chat, system_prompt=args.system_prompt, note=say)
        say(f"Loaded {count} messages from {args.path}; the next %%agent cell continues it.")

    @magic_arguments("agent config")
    def _config(self, rest: str) -> None:
        """The settings (%config AgentMagics.NAME = ...) and the live agent."""
        parse_command(self._config, rest)
        rows: list[tuple[str, str]] = []
        for name in sorted(self.class_trait_names(config=True)):
            value = getattr(self, name)
            if name == "system_prompt" and len(value) > 60:
                value = value[:59] + "…"
            rows.append((f"AgentMagics.{name}", repr(value)))
        rows.extend(self.session.describe())
        rows.extend(self.managed.describe())
        width = max(len(key) for key, _ in rows)
        say(self._model_line())
        say("\n".join(f"{key.ljust(width)}  {value}" for key, value in rows))

    def _model_line(self) -> str:
        from .model_choice import answering_model

        session = self.session
        return f"model: {answering_model(session.settings, session.custom_provider)}"

    @magic_arguments("agent model")
    @argument(
        "name",
        nargs="?",
        default=None,
        type=unquoted,
        metavar="NAME",
        help="The model from the next %%agent cell on (e.g. claude-haiku-4-5); "
        "omitted: show the model that will answer.",
    )
    def _model(self, rest: str) -> None:
        """Show or set the model (AgentMagics.model) the next %%agent cells use."""
        args = parse_command(self._model, rest)
        if args.name is not None:
            self.managed.refuse(self.managed.check("model", args.name.strip()))
            self.model = args.name.strip()
        say(self._model_line())

    #: ``%agent WORD ...`` → the method that handles the rest of the line (one entry each).
    SUBCOMMANDS: ClassVar[dict[str, Callable[[AgentMagics, str], None]]] = {
        "reset": _reset,
        "chats": _chats,
        "history": _history,
        "usage": _usage,
        "error": _error,
        "compact": _compact,
        "undo": _undo,
        "save": _save,
        "load": _load,
        "config": _config,
        "model": _model,
        "go": _go,
        "mcp": _mcp,
        "serve": _serve,
        "ask": ask_command,
        "replay": replay_command,
    }

    # -- %agent_tools ------------------------------------------------------------------------

    @line_magic
    def agent_tools(self, line: str) -> None:
        """Show the agent's tools as toggles, or change them from the line.

        ``%agent_tools`` (a panel of toggles), ``%agent_tools list`` (a table),
        ``%agent_tools enable NAME [NAME...]``, ``%agent_tools disable NAME [NAME...]``,
        ``%agent_tools policy NAME allow|ask|deny``. Every chat shares the tools and policies.
        """
        command, _, rest = line.strip().partition(" ")
        with _as_usage_errors():
            self.session.registry  # noqa: B018 - a workspace that is gone: refused before output
            self._connect_mcp_servers()
        if not command:
            if self.use_widgets():
                self._panel.show(self.session)
            else:
                print_tools(self)
            return
        handler = self.TOOLS_COMMANDS.get(command)
        if handler is None:
            raise UsageError(
                f"Unknown %agent_tools command {command!r}; use list, enable NAME, "
                "disable NAME or policy NAME allow|ask|deny (no argument: the panel)"
            )
        with _as_usage_errors():
            handler(self, rest)
        self._panel.refresh()

    #: ``%agent_tools WORD ...`` → the function that handles the rest of the line.
    TOOLS_COMMANDS: ClassVar[dict[str, Callable[[ToolsOwner, str], None]]] = TOOLS_COMMANDS


def _subcommand_help(magic: str, commands: Mapping[str, Callable[..., None]]) -> str:
    """One usage line per command of ``%magic``, for ``%magic?``."""
    lines = ["", "", f"%{magic} commands:", ""]
    for handler in commands.values():
        parser = getattr(handler, "parser", None)
        if parser is None:  # a command with a parser of its own: its docstring's first line
            lines.append("  " + (handler.__doc__ or "").strip().splitlines()[0])
            continue
        usage = parser.format_usage()
        lines.append("  " + " ".join(usage.split()).removeprefix(":: ").removeprefix("usage: "))
    return "\n".join(lines)


AgentMagics.agent_magic.__doc__ = (AgentMagics.agent_magic.__doc__ or "") + _subcommand_help(
    "agent", AgentMagics.SUBCOMMANDS
)
AgentMagics.agent_tools.__doc__ = (AgentMagics.agent_tools.__doc__ or "") + _subcommand_help(
    "agent_tools", AgentMagics.TOOLS_COMMANDS
)
