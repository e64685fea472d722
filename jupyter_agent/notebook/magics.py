"""``AgentMagics``: ``%%agent``, ``%agent`` and ``%agent_tools``, and the session's agent.

One instance per IPython session holds the agent, its background event loop (``runner.py``) and
the settings, which are traitlets: ``%config AgentMagics.model = "claude-..."``. Arguments are
parsed with ``magic_arguments`` (so ``%%agent?`` shows them) and every user mistake raises a
one-line ``UsageError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from traitlets import Bool, Dict, Enum, Float, Int, TraitError, Unicode, observe, validate

from ..agent.approvals import POLICIES, Policy
from ..errors import ProviderError
from ..events import AgentFinished, TurnFinished, TurnStarted, Usage
from ..providers.base import Provider
from ._ipython import argument, display, line_cell_magic, magic_arguments, parse_argstring
from .approvals_ui import NotebookApprovals
from .console import OrderedConsole, PrintedText
from .kernel_comm import KernelCommPoller
from .kernel_tools import kernel_tools
from .pricing import SOURCE, SOURCE_DATE, UNPRICED, estimate_cost, user_prices
from .prompt_vars import expand_variables
from .render import DEFAULT_RENDER_INTERVAL_S, MarkdownText, Renderer, RichRenderer, TextRenderer
from .runner import BackgroundLoop, MainThreadBridge, forward_events

if TYPE_CHECKING:
    from .mcp_commands import MCPCommands

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant working inside the user's Jupyter notebook. You can use tools "
    "to read and change files in the notebook's folder (the workspace) and to look at the "
    "variables of the user's Python session. Answer in Markdown; be concise and show the code "
    "or numbers that support your answer."
)

SESSION_FORMAT = "jupyter-agent-session"
SESSION_VERSION = 1

OFFLINE_NOTE = (
    "jupyter-agent: no ANTHROPIC_API_KEY is set, so the offline demo model answers. Set "
    "ANTHROPIC_API_KEY (or %config AgentMagics.provider = 'anthropic') to use Claude."
)

_ROLES = ("user", "assistant")
_PROVIDERS = ("auto", "anthropic", "offline", "openai")
_HOUSEKEEPING = ("reset", "history", "usage", "save", "load", "config", "mcp")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@magics_class
class AgentMagics(Magics):
    """Talk to a Claude agent from notebook cells."""

    provider = Enum(
        ["auto", "anthropic", "offline", "openai"],
        default_value="auto",
        help="Which model serves the agent. 'auto': Claude when ANTHROPIC_API_KEY is set, "
        "else the offline demo model.",
    ).tag(config=True)
    model = Unicode("", help="Model name; empty for the provider's default.").tag(config=True)
    workspace = Unicode(
        "", help="Folder the agent's file tools work in; empty: the notebook's folder."
    ).tag(config=True)
    # ``min``: a bad %config value is refused before it is set (an observer raising would be
    # too late: the value would stick and break the next cell).
    max_turns = Int(20, min=1, help="Model turns one %%agent cell may take.").tag(config=True)
    system_prompt = Unicode(DEFAULT_SYSTEM_PROMPT, help="The agent's system prompt.").tag(
        config=True
    )
    offline_cassette = Unicode(
        "", help="A recorded session (JSON cassette) for the offline model to replay."
    ).tag(config=True)
    allow_private_network = Bool(
        False, help="Let web_fetch reach loopback and private addresses (your own services)."
    ).tag(config=True)
    render_interval = Float(
        DEFAULT_RENDER_INTERVAL_S,
        min=0.0,
        help="Seconds between two updates of a streaming answer.",
    ).tag(config=True)
    ui = Enum(
        ["auto", "widgets", "text"],
        default_value="auto",
        help="'widgets' in Jupyter, 'text' in terminal IPython; 'auto' picks by the shell.",
    ).tag(config=True)
    prices = Dict(
        {},
        help="Your own prices in dollars per million tokens, by model name or prefix: "
        "{'my-model': {'input': 1, 'output': 5}} (optional 'cache_write', 'cache_read'); they "
        "override the built-in list prices in %agent usage.",
    ).tag(config=True)
    mcp_servers = Dict(
        {},
        help="MCP servers in the shared mcpServers shape: {'name': {'command': ..., 'args': [...], "
        "'env': {...}}} or {'name': {'url': ...}}, plus an optional 'policy' (default 'ask'); "
        "connected on first use. See %agent mcp.",
    ).tag(config=True)
    variable_budget = Int(
        8000, min=0, help="Characters of {{variable}} summaries one prompt may carry."
    ).tag(config=True)

    _agent_settings: ClassVar[tuple[str, ...]] = ("workspace", "allow_private_network")

    @validate("prices")
    def _check_prices(self, proposal: dict[str, Any]) -> dict[str, Any]:
        try:
            user_prices(proposal["value"])
        except ValueError as exc:
            raise TraitError(str(exc)) from None
        return dict(proposal["value"])

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        # Before super().__init__: loading the shell's config fires the observers below.
        self._agent: Any = None
        self._agent_stale = False
        self._custom_provider: Provider | None = None
        super().__init__(shell=shell, **kwargs)
        self._start_dir = os.getcwd()
        self._background: BackgroundLoop | None = None
        self._bridge: MainThreadBridge | None = None
        self._providers: dict[tuple[Any, ...], Provider] = {}
        self._usage_by_model: dict[str, Usage] = {}
        self._renderer: Renderer | None = None
        self._panels: weakref.WeakSet[Any] = weakref.WeakSet()
        self._offline_noted = False
        self._mcp: MCPCommands | None = None

    # -- settings ----------------------------------------------------------------------------

    @observe("workspace", "allow_private_network")
    def _on_agent_setting(self, change: dict[str, Any]) -> None:
        self._agent_stale = True

    @observe("max_turns")
    def _on_max_turns(self, change: dict[str, Any]) -> None:
        if self._agent is not None:
            self._agent.max_turns = change["new"]

    @observe("system_prompt")
    def _on_system_prompt(self, change: dict[str, Any]) -> None:
        if self._agent is not None:
            self._agent.set_system_prompt(change["new"])

    @observe("provider", "model", "offline_cassette")
    def _on_provider_setting(self, change: dict[str, Any]) -> None:
        self._custom_provider = None

    def workspace_path(self) -> Path:
        return Path(self.workspace or self._start_dir).expanduser()

    def _user_ns(self) -> dict[str, Any]:
        if self.shell is None:
            raise UsageError("the agent magics need an IPython shell")
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def use_widgets(self) -> bool:
        if self.ui != "auto":
            return bool(self.ui == "widgets")
        return getattr(self.shell, "kernel", None) is not None

    # -- the session's machinery -------------------------------------------------------------

    @property
    def bridge(self) -> MainThreadBridge:
        if self._bridge is None:
            self._background = BackgroundLoop()
            self._bridge = MainThreadBridge(self._background)
        return self._bridge

    @property
    def agent(self) -> Any:
        """The session's ``Agent`` (created on first use)."""
        return self._ensure_agent()

    def use_provider(self, provider: Provider) -> None:
        """Serve the agent from ``provider`` (until a provider/model setting changes).

        The hook for providers the settings can't describe, such as an ``AnthropicProvider``
        with a client of your own (a proxy, a custom transport).
        """
        self._custom_provider = provider
        if self._agent is not None:
            self._agent.provider = provider

    def _provider_key(self, kind: str, model: str) -> tuple[Any, ...]:
        if kind != "auto":
            return (kind, model, self.offline_cassette)
        env = os.environ
        return (
            kind,
            model,
            self.offline_cassette,
            env.get("JUPYTER_AGENT_PROVIDER", ""),
            bool(env.get("ANTHROPIC_API_KEY")),
            env.get("ANTHROPIC_BASE_URL", ""),
        )

    def _provider_for(self, kind: str, model: str) -> Provider:
        key = self._provider_key(kind, model)
        provider = self._providers.get(key)
        if provider is None:
            provider = self.bridge.background.run(self._build_provider(kind, model))
            self._providers[key] = provider
        return provider

    async def _build_provider(self, kind: str, model: str) -> Provider:
        """Built on the background loop, where the provider's HTTP client will live."""
        cassette = self.offline_cassette or None
        try:
            if kind == "auto":
                from ..providers.auto import select_default_provider

                return select_default_provider(cassette=cassette, model=model or None)
            if kind == "anthropic":
                from ..providers.anthropic import AnthropicProvider

                return AnthropicProvider(model or None)
            if kind == "openai":
                from ..providers.openai_compat import OpenAIProvider

                return OpenAIProvider(model or None)
            from ..providers.offline import OfflineProvider

            return OfflineProvider(cassette)
        except (ValueError, ImportError, OSError, ProviderError) as exc:
            raise UsageError(f"Cannot use provider {kind!r}: {_one_line(str(exc))}") from None
        except Exception as exc:  # e.g. the SDK refusing to start without a key
            raise UsageError(f"Cannot use provider {kind!r}: {_one_line(str(exc))}") from None

    def _session_provider(self, kind: str | None = None, model: str | None = None) -> Provider:
        if kind is None and model is None and self._custom_provider is not None:
            return self._custom_provider
        return self._provider_for(kind or self.provider, model if model is not None else self.model)

    def _ensure_agent(self) -> Any:
        if self._agent is not None and not self._agent_stale:
            return self._agent
        from ..agent.agent import Agent
        from ..tools.factory import create_default_registry

        workspace = self.workspace_path()
        if not workspace.is_dir():
            raise UsageError(f"The workspace {str(workspace)!r} is not an existing folder")
        bridge = self.bridge
        approvals = NotebookApprovals(
            bridge, self.shell, use_widgets=self.use_widgets, on_waiting=self._mark_waiting
        )
        agent = Agent(
            self._session_provider(),
            workspace=workspace,
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            approval_handler=approvals,
        )
        if self.allow_private_network:
            agent.registry = create_default_registry(agent.context, allow_private_network=True)
        if self.shell is not None:
            for tool in kernel_tools(agent.context, self.shell.user_ns, bridge, self.shell):
                agent.add_tool(tool)
            agent.disable_tool("run_python")
        previous = self._agent
        if previous is not None:  # settings changed: keep the conversation and the choices
            if self._mcp is not None:
                from ..mcp import manager_for

                manager_for(previous).move_to(agent)
            agent.messages = previous.messages
            agent.usage = previous.usage
            for name in agent.registry.get_tool_names():
                if previous.registry.has_tool(name):
                    agent.registry.set_enabled(name, previous.registry.is_tool_enabled(name))
                    agent.set_policy(name, previous.get_policy(name))
        self._agent = agent
        self._approvals = approvals
        self._agent_stale = False
        for panel in list(self._panels):
            panel.rebind(agent)
        return agent

    @property
    def mcp(self) -> MCPCommands:
        """The ``%agent mcp`` commands; servers run on the session's background loop."""
        if self._mcp is None:
            from .mcp_commands import MCPCommands

            background = self.bridge.background
            self._mcp = MCPCommands(lambda coro: background.run(coro))
        return self._mcp

    def _connect_mcp_servers(self, agent: Any) -> None:
        """Connect the ``mcp_servers`` entries not tried yet (first use, or after a change)."""
        if not self.mcp_servers:
            return
        for problem in self.mcp.connect_configured(agent, self.mcp_servers):
            print(problem, file=sys.stderr)

    def _mark_waiting(self, call_id: str, waiting: bool) -> None:
        if self._renderer is not None:
            self._renderer.mark_waiting(call_id, waiting)

    def close(self) -> None:
        """Release the providers' connections and stop the background loop."""
        background = self._background
        if background is None:
            return
        providers = {id(p): p for p in [*self._providers.values(), self._custom_provider] if p}
        if self._mcp is not None and self._agent is not None:
            with contextlib.suppress(Exception):
                self._mcp.close(self._agent)  # the servers' processes end here
            self._mcp = None

        async def close_all() -> None:
            for provider in providers.values():
                with contextlib.suppress(Exception):
                    await provider.aclose()

        with contextlib.suppress(Exception):
            background.run(close_all(), timeout=10)
        background.close()
        self._background = None
        self._bridge = None
        self._agent = None
        self._providers.clear()

    # -- %%agent -----------------------------------------------------------------------------

    @magic_arguments("%agent")  # the usage line reads "%%agent [--model MODEL] ..."
    @argument("--model", "-m", default=None, help="Model for this cell only.")
    @argument(
        "--provider",
        "-p",
        default=None,
        help="Provider for this cell only: auto, anthropic, offline or openai.",
    )
    @argument("--new", action="store_true", help="Start a new conversation before this prompt.")
    @argument("--max-turns", type=int, default=None, help="Model turns for this cell only.")
    @argument("--system", default=None, help="Replace the system prompt (from this cell on).")
    @argument("--out", default=None, help="Store the final answer in this variable.")
    @line_cell_magic("agent")
    def agent_magic(self, line: str, cell: str | None = None) -> None:
        """Ask the agent: the cell body is the prompt; the conversation carries over.

        In the prompt, ``{{name}}`` brings in a summary of the kernel variable ``name``.

        Line form (housekeeping): ``%agent reset`` (new conversation), ``%agent history``,
        ``%agent usage`` (tokens and cost), ``%agent save PATH``, ``%agent load PATH``,
        ``%agent config``, ``%agent mcp add|list|remove`` (MCP servers).
        """
        if cell is None:
            self._housekeeping(line)
            return None
        args = parse_argstring(self.agent_magic, line)
        prompt = cell.strip()
        if not prompt:
            raise UsageError("%%agent needs a prompt: write it in the cell below the %%agent line")
        if args.provider is not None and args.provider not in _PROVIDERS:
            raise UsageError(
                f"Unknown provider {args.provider!r}; use auto, anthropic, offline or openai"
            )
        if args.max_turns is not None and args.max_turns < 1:
            raise UsageError("--max-turns must be at least 1")
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"--out needs a variable name, not {args.out!r}")
        agent = self._ensure_agent()
        self._connect_mcp_servers(agent)
        if args.new:
            agent.clear_context()
        if args.system is not None:
            self.system_prompt = args.system
        # Resolved for every cell: %config changes, a key set since, or this cell's options.
        agent.provider = self._session_provider(args.provider, args.model)
        saved_max_turns = agent.max_turns
        if args.max_turns is not None:
            agent.max_turns = args.max_turns
        try:
            text = self._run_chat(agent, prompt)
        finally:
            agent.max_turns = saved_max_turns
        if args.out is not None and text is not None:
            self._user_ns()[args.out] = text
        return None

    def _run_chat(self, agent: Any, prompt: str) -> str | None:
        expanded = expand_variables(prompt, self._user_ns(), self.variable_budget)
        provider = agent.provider
        announced = bool(getattr(provider, "notice", False))  # it says so in its answers
        if provider.name == "offline" and not announced and not self._offline_noted:
            self._offline_noted = True
            print(OFFLINE_NOTE)
        rich = self.use_widgets()
        poller = KernelCommPoller.for_shell(self.shell) if rich else None
        renderer: Renderer = (
            RichRenderer(self.render_interval, on_stop=self.bridge.request_stop if poller else None)
            if rich
            else TextRenderer()
        )
        self._renderer = renderer
        self._approvals.poller = poller
        final: dict[str, Any] = {"text": None, "model": agent.provider.model}

        def on_event(event: object) -> None:
            if isinstance(event, PrintedText):
                event.show()
                return
            if isinstance(event, TurnStarted) and event.model:
                final["model"] = event.model
            elif isinstance(event, TurnFinished):
                model = str(final["model"])
                self._usage_by_model[model] = self._usage_by_model.get(model, Usage()) + event.usage
            elif isinstance(event, AgentFinished):
                final["text"] = event.text
            renderer.handle(event)

        def on_idle() -> None:
            renderer.tick()
            if poller is not None:
                poller.poll(0)

        bridge = self.bridge
        try:
            with OrderedConsole(bridge.post):
                outcome = bridge.run(
                    forward_events(agent.stream_chat(expanded.text), bridge),
                    on_event,
                    on_idle=on_idle,
                    # a terminal prints text as it comes; the widgets' throttle is for displays
                    text_growth=None if rich else 0.0,
                )
        except ProviderError as exc:
            renderer.close(interrupted=False)
            raise UsageError(f"The model request failed: {_one_line(str(exc))}") from None
        finally:
            self._renderer = None
            self._approvals.poller = None
            if poller is not None:
                poller.close()
        if outcome.interrupted:
            renderer.close(interrupted=True)
            print("■ Interrupted. The conversation keeps what happened so far; run %%agent again.")
            return None
        renderer.close(interrupted=False)
        text = final["text"]
        return text if text is not None else renderer.text

    # -- %agent housekeeping -----------------------------------------------------------------

    def _housekeeping(self, line: str) -> None:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%agent: {exc}") from None
        if not words:
            commands = ", ".join(_HOUSEKEEPING)
            raise UsageError(f"%agent needs a command: {commands} (use %%agent for a prompt)")
        command, rest = words[0], words[1:]
        handlers: dict[str, Callable[[list[str]], None]] = {
            "reset": self._cmd_reset,
            "history": self._cmd_history,
            "usage": self._cmd_usage,
            "save": self._cmd_save,
            "load": self._cmd_load,
            "config": self._cmd_config,
            "mcp": self._cmd_mcp,
        }
        handler = handlers.get(command)
        if handler is None:
            raise UsageError(
                f"Unknown %agent command {command!r}; use one of: {', '.join(_HOUSEKEEPING)} "
                "(to ask the agent, use a %%agent cell)"
            )
        handler(rest)

    @staticmethod
    def _no_arguments(command: str, rest: list[str]) -> None:
        if rest:
            raise UsageError(f"%agent {command} takes no arguments (got {' '.join(rest)!r})")

    def _cmd_reset(self, rest: list[str]) -> None:
        self._no_arguments("reset", rest)
        if self._agent is not None:
            self._agent.clear_context()
        print("The conversation was cleared; the next %%agent cell starts a new one.")

    def _cmd_history(self, rest: list[str]) -> None:
        self._no_arguments("history", rest)
        agent = self._agent
        if agent is None or not agent.messages:
            print("(the conversation is empty)")
            return
        display(MarkdownText(agent.session_context))

    def _cmd_usage(self, rest: list[str]) -> None:
        self._no_arguments("usage", rest)
        if not self._usage_by_model:
            print("No tokens used yet in this session.")
            return
        lines = [f"{'model':<28} {'input':>9} {'output':>9} {'cache r/w':>13} {'cost':>9}"]
        total_cost: float | None = 0.0
        total = Usage()
        prices = user_prices(self.prices)
        for model, usage in self._usage_by_model.items():
            total = total + usage
            cost = estimate_cost(model, usage, prices)
            if cost is None:
                total_cost = None
            elif total_cost is not None:
                total_cost += cost
            cache = f"{usage.cache_read_input_tokens}/{usage.cache_creation_input_tokens}"
            cost_text = "unpriced" if cost is None else f"${cost:.4f}"
            lines.append(
                f"{model:<28} {usage.input_tokens:>9} {usage.output_tokens:>9} {cache:>13} "
                f"{cost_text:>9}"
            )
        if len(self._usage_by_model) > 1:
            cost_text = "unpriced" if total_cost is None else f"${total_cost:.4f}"
            cache = f"{total.cache_read_input_tokens}/{total.cache_creation_input_tokens}"
            lines.append(
                f"{'total':<28} {total.input_tokens:>9} {total.output_tokens:>9} {cache:>13} "
                f"{cost_text:>9}"
            )
        lines.append(
            "input/output: tokens sent and received; cache r/w: tokens read from / written to "
            "the prompt cache;"
        )
        lines.append(
            f"cost: an estimate from the list prices at {SOURCE} (as of {SOURCE_DATE}) and "
            "AgentMagics.prices; 'unpriced': no published price"
        )
        for model in self._usage_by_model:
            if model in UNPRICED:
                lines.append(f"({model}: {UNPRICED[model]})")
        print("\n".join(lines))

    def _cmd_save(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise UsageError("usage: %agent save PATH")
        agent = self._ensure_agent()
        path = Path(rest[0]).expanduser()
        payload = {
            "format": SESSION_FORMAT,
            "version": SESSION_VERSION,
            "system_prompt": agent.system_prompt,
            "provider": agent.provider.name,
            "model": agent.provider.model,
            "messages": agent.messages,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"Cannot save the conversation to {str(path)!r}: {exc}") from None
        print(f"Saved {len(agent.messages)} messages to {path}")

    def _cmd_load(self, rest: list[str]) -> None:
        if len(rest) != 1:
            raise UsageError("usage: %agent load PATH")
        path = Path(rest[0]).expanduser()
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"No saved conversation at {str(path)!r}") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"Cannot read {str(path)!r}: {_one_line(str(exc))}") from None
        messages = payload.get("messages") if isinstance(payload, dict) else None
        if (
            not isinstance(payload, dict)
            or payload.get("format") != SESSION_FORMAT
            or not isinstance(messages, list)
            or not all(isinstance(m, dict) and m.get("role") in _ROLES for m in messages)
        ):
            raise UsageError(f"{str(path)!r} is not a conversation saved by %agent save")
        agent = self._ensure_agent()
        agent.messages = list(messages)
        system_prompt = payload.get("system_prompt")
        if isinstance(system_prompt, str):
            self.system_prompt = system_prompt
            agent.set_system_prompt(system_prompt)
        print(f"Loaded {len(messages)} messages from {path}; the next %%agent cell continues it.")

    def _cmd_mcp(self, rest: list[str]) -> None:
        agent = self._ensure_agent()
        self._connect_mcp_servers(agent)
        print(self.mcp.command(agent, rest))

    def _cmd_config(self, rest: list[str]) -> None:
        self._no_arguments("config", rest)
        rows: list[tuple[str, str]] = []
        for name in sorted(self.class_trait_names(config=True)):
            value = getattr(self, name)
            if name == "system_prompt" and len(value) > 60:
                value = value[:59] + "…"
            rows.append((f"AgentMagics.{name}", repr(value)))
        if self._agent is not None:
            agent = self._agent
            rows.append(("agent provider", f"{agent.provider.name} ({agent.provider.model})"))
            rows.append(("agent workspace", str(agent.context.workspace)))
            registry = agent.registry
            enabled = [n for n in registry.get_tool_names() if registry.is_tool_enabled(n)]
            rows.append(("enabled tools", ", ".join(enabled) or "none"))
            rows.append(("messages", str(len(agent.messages))))
        else:
            rows.append(("agent", "not created yet (the first %%agent cell creates it)"))
        width = max(len(key) for key, _ in rows)
        print("\n".join(f"{key.ljust(width)}  {value}" for key, value in rows))

    # -- %agent_tools ------------------------------------------------------------------------

    @line_magic
    def agent_tools(self, line: str) -> None:
        """Show the agent's tools as toggles, or change them from the line.

        ``%agent_tools`` (a panel of toggles), ``%agent_tools list`` (a table),
        ``%agent_tools enable NAME [NAME...]``, ``%agent_tools disable NAME [NAME...]``,
        ``%agent_tools policy NAME allow|ask|deny``.
        """
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%agent_tools: {exc}") from None
        agent = self._ensure_agent()
        self._connect_mcp_servers(agent)
        if not words:
            if self.use_widgets():
                from .widgets.tool_panel import ToolPanel

                panel = ToolPanel(agent)
                self._panels.add(panel)
                display(panel)
            else:
                self._print_tools(agent)
            return
        command, names = words[0], words[1:]
        if command == "list":
            if names:
                raise UsageError("%agent_tools list takes no arguments")
            self._print_tools(agent)
            return
        if command in ("enable", "disable"):
            if not names:
                raise UsageError(f"usage: %agent_tools {command} NAME [NAME...]")
            self._check_tool_names(agent, names)
            for name in names:
                agent.registry.set_enabled(name, command == "enable")
            if command == "enable":
                states = ", ".join(f"{name} (policy {agent.get_policy(name)})" for name in names)
                print(f"enabled: {states}")
            else:
                print(f"disabled: {', '.join(names)}")
        elif command == "policy":
            if len(names) != 2 or names[1] not in POLICIES:
                raise UsageError("usage: %agent_tools policy NAME allow|ask|deny")
            self._check_tool_names(agent, names[:1])
            policy: Policy = names[1]
            agent.set_policy(names[0], policy)
            print(f"{names[0]}: policy {policy}")
        else:
            raise UsageError(
                f"Unknown %agent_tools command {command!r}; use list, enable NAME, "
                "disable NAME or policy NAME allow|ask|deny (no argument: the panel)"
            )
        for panel in list(self._panels):
            panel.refresh()

    @staticmethod
    def _check_tool_names(agent: Any, names: list[str]) -> None:
        known = agent.registry.get_tool_names()
        unknown = [name for name in names if name not in known]
        if unknown:
            listed = ", ".join(repr(name) for name in unknown)
            raise UsageError(f"Unknown tool {listed}; valid names: {', '.join(known) or '(none)'}")

    @staticmethod
    def _print_tools(agent: Any) -> None:
        from .widgets.tool_panel import tools_table

        print(tools_table(agent))
