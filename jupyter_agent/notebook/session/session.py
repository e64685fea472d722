"""``NotebookSession``: the notebook's conversations, providers, usage and undo — without IPython.

The magics (``magics.py``) are a front end: they parse a line, render events and print. Everything
a notebook session *is* lives here, in a plain object that a script or a test can drive with no
shell at all:

- **Settings** (``SessionSettings``), changed through ``configure`` (``%config AgentMagics.*``).
- **Conversations.** One ``Agent`` per chat name (``%%agent --chat NAME``; the first is
  ``default``). The chats share the session's ``Toolbox`` — the tool registry (enabled tools,
  the tools you add, MCP servers' tools), the policy gate (approval policies), the workspace and
  its undo journal — and the settings, and keep apart what belongs to a conversation: its
  messages and its token usage. The tools' context follows the chat that runs
  (``save_session_context`` saves that chat).
  ``agent`` is the default chat's agent, the one ``get_magics(ip).agent`` hands out.
- **The toolbox** is built on first use and *rebuilt in place* when the workspace or the network
  setting changes: new tools for the new context take the places of the old ones, with their
  enabled states and policies; the agents, their conversations, the user's own tools and the MCP
  servers stay as they are.
- **Providers**, built on the session's one background loop (where their HTTP clients must
  stay) and cached by what tells them apart (kind, model, thinking budget, ...);
  ``use_provider`` plugs in one of your own.
- **MCP servers** belong to the toolbox (``toolbox.mcp``), their tools in its registry; they end
  with ``close``.
- **Usage** per model, for ``%agent usage``.
- **Undo**: the workspace's change journal (``tools/guard/journal.py``) on the tools' shared
  context, an entry per turn (per ``%%agent`` cell), whichever chat ran it.

Every refusal is a ``SessionError`` with a one-line message (the magics show it as a
``UsageError``).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agent.agent import Agent
from ...agent.toolbox import Toolbox
from ...approvals import ApprovalHandler, Policy
from ...errors import ModelRequestError, ProviderError, SessionError, WorkspaceError
from ...events import (
    AgentFinished,
    ContextCompacted,
    TextDelta,
    TextReset,
    TurnFinished,
    TurnStarted,
    Usage,
)
from ...providers.base import Provider, ThinkingProvider
from ...tools.base import ExecutableTool
from ...tools.context import ToolContext
from ...tools.factory import create_default_registry
from ...tools.guard.egress import EgressHosts
from ...tools.guard.journal import ChangeJournal
from ...tools.one_line import one_line
from ...tools.project_files import find_instructions, with_instructions
from ...tools.registry import ToolRegistry
from ..asking.user_questions import UserQuestions
from ..runtime.bridge import BackgroundLoop, MainThreadBridge, forward_events
from ..runtime.console import OrderedConsole, PrintedText
from ..spend.budget import BudgetedProvider, SpendGuard
from ..spend.pricing import UsageLedger, money, user_prices
from ..spend.usage_report import usage_report
from .conversation_file import read_conversation, save_conversation
from .instructions_note import InstructionsNote
from .notebook_tools import notebook_tools
from .prompt_redaction import redaction_line
from .prompt_vars import expand_variables
from .settings import (
    DEFAULT_CHAT,
    PROVIDER_KINDS,
    SETTING_NAMES,
    SessionSettings,
    check_chat_name,
)

if TYPE_CHECKING:
    from ...mcp.manager import MCPManager

OFFLINE_NOTE = (
    "jupyter-agent: no ANTHROPIC_API_KEY is set, so the offline demo model answers. Set "
    "ANTHROPIC_API_KEY (or %config AgentMagics.provider = 'anthropic') to use Claude."
)

#: Settings whose change rebuilds the toolbox's tools (bound to the new workspace or network).
_REBUILD_SETTINGS = frozenset({"workspace", "allow_private_network"})
#: Settings that choose the provider: a change drops a provider given with ``use_provider``.
_PROVIDER_SETTINGS = frozenset({"provider", "model", "offline_cassette"})
#: Settings every chat's agent holds as an attribute of the same name, changed in place
#: (``tool_timeout`` is the shared toolbox's, set through any agent).
_AGENT_SETTINGS = frozenset(
    {"max_turns", "tool_timeout", "max_result_chars", "context_window", "max_parallel_tools"}
)


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one turn ended: the full final text and the answer alone (``None`` if interrupted)."""

    text: str | None
    #: ``text`` without what only labels it (the offline model's notice and footer).
    answer: str | None
    interrupted: bool = False


@dataclass(frozen=True, slots=True)
class ChatSummary:
    name: str
    messages: int
    usage: Usage


#: The environment variables a provider of each kind reads when it is built.
_PROVIDER_ENVIRONMENT = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "JUPYTER_AGENT_MODEL"),
    "auto": (
        "JUPYTER_AGENT_PROVIDER",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
    ),
}


def _environment_fingerprint(kind: str) -> str:
    """A digest of the variables ``kind`` reads (the keys themselves are not kept)."""
    values = "\0".join(os.environ.get(name, "") for name in _PROVIDER_ENVIRONMENT.get(kind, ()))
    return hashlib.sha256(values.encode()).hexdigest()


class NotebookSession:
    """The agents, providers, usage and journal of one notebook session."""

    def __init__(
        self,
        settings: SessionSettings | None = None,
        *,
        namespace: dict[str, Any] | None = None,
        shell: Any = None,
        approvals: Callable[[MainThreadBridge], ApprovalHandler] | None = None,
        notify: Callable[[str], None] = print,
        start_dir: str | os.PathLike[str] | None = None,
        questions: Callable[[MainThreadBridge], UserQuestions] | None = None,
        show_link: Callable[[str, str], None] | None = None,
    ) -> None:
        """``namespace``: the user's variables (the kernel tools and ``{{name}}`` read them);
        ``approvals``: builds the handler that asks the user, given the session's bridge;
        ``notify``: how a one-line note reaches the user; ``show_link(text, url)``: how a link
        (an MCP server's "Authorize") reaches the user, on the main thread (default: ``notify``)."""
        self.settings = settings if settings is not None else SessionSettings()
        self.namespace = namespace
        self._shell = shell
        self._make_approvals = approvals
        #: Builds what asks the user a question (``ask_user``), given the session's bridge.
        self._make_questions = questions
        self._approvals: ApprovalHandler | None = None
        self._notify = notify
        self._instructions_note = InstructionsNote()
        self._show_link = show_link
        self._start_dir = Path(start_dir if start_dir is not None else os.getcwd())
        self._background: BackgroundLoop | None = None
        self._bridge: MainThreadBridge | None = None
        self._chats: dict[str, Agent] = {}
        self._toolbox: Toolbox | None = None
        #: Hosts web_fetch may reach: ``web_allow`` and the hosts allowed this session.
        self.egress = EgressHosts(self.settings.web_allow)
        self._stale = False
        self._providers: dict[tuple[Any, ...], Provider] = {}
        self._custom_provider: Provider | None = None
        self._offline_noted = False
        self._ignored_models: set[str] = set()
        self._budget_used = False
        self._journal_problem = ""
        self._turns = 0
        #: Called with the default chat's agent whenever the toolbox is (re)built.
        self.on_rebuild: list[Callable[[Agent], None]] = []
        #: What every model request of the session used, per model and prompt-size tier.
        self.ledger = UsageLedger()
        #: The spend guard of the turn that runs, if it has caps.
        self._turn_guard: SpendGuard | None = None

    # -- settings ----------------------------------------------------------------------------

    def configure(self, **changes: Any) -> None:
        """Change settings; the agents follow (now, or at their next turn)."""
        for name, value in changes.items():
            if name not in SETTING_NAMES:
                raise SessionError(
                    f"Unknown setting {name!r}; settings: {', '.join(SETTING_NAMES)}"
                )
            setattr(self.settings, name, value)
            if name in _REBUILD_SETTINGS:
                self._stale = True
            if name in _PROVIDER_SETTINGS:
                self._custom_provider = None
            if name == "system_prompt":
                for agent in self._chats.values():
                    agent.set_system_prompt(value)
            if name == "web_allow":
                self.egress.configure(value)
            if name == "shell_network" and self._toolbox is not None:
                self._toolbox.context.shell_network = bool(value)
            if name in _AGENT_SETTINGS:
                for agent in self._chats.values():
                    setattr(agent, name, value)

    def workspace_path(self) -> Path:
        return Path(self.settings.workspace or self._start_dir).expanduser()

    # -- the background loop -----------------------------------------------------------------

    @property
    def bridge(self) -> MainThreadBridge:
        """The queue between the session's background loop and the main thread."""
        if self._bridge is None:
            self._background = BackgroundLoop()
            self._bridge = MainThreadBridge(self._background)
        return self._bridge

    @property
    def background(self) -> BackgroundLoop | None:
        """The session's event loop, once started (providers and tool calls run there)."""
        return self._background

    # -- providers ---------------------------------------------------------------------------

    def use_provider(self, provider: Provider) -> None:
        """Serve every chat from ``provider`` (until a provider/model setting changes)."""
        self._custom_provider = provider
        for agent in self._chats.values():
            agent.provider = provider

    def provider(
        self,
        kind: str | None = None,
        model: str | None = None,
        think: int | None = None,
        effort: str | None = None,
    ) -> Provider:
        """The provider for ``kind``/``model`` (the settings' when ``None``), built once.

        ``think``: a thinking budget for this turn (else ``settings.thinking_budget``); it
        applies to Claude (``AnthropicProvider``) and is ignored, with a note, by the others.
        """
        budget = think if think is not None else self.settings.thinking_budget
        effort = effort if effort is not None else self.settings.effort
        if kind is None and model is None and self._custom_provider is not None:
            return self._with_thinking(self._custom_provider, budget, effort)
        kind = kind or self.settings.provider
        if kind not in PROVIDER_KINDS:
            raise SessionError(f"Unknown provider {kind!r}; use auto, anthropic, offline or openai")
        model = model if model is not None else self.settings.model
        key = self._provider_key(kind, model, budget)
        provider = self._providers.get(key)
        if provider is None:
            built = self.bridge.background.run(self._build_provider(kind, model))
            provider = self._with_thinking(built, budget, effort)
            self._providers[key] = provider
        return provider

    def _with_thinking(
        self, provider: Provider, budget: int | None, effort: str | None = None
    ) -> Provider:
        """``provider`` thinking with ``budget`` at ``effort``: itself, or a cached copy sharing
        its client."""
        if not isinstance(provider, ThinkingProvider):
            if budget is not None or effort is not None:
                self._notify(
                    f"jupyter-agent: extended thinking is for Claude; the {provider.name} "
                    "provider answers without it."
                )
            return provider
        if provider.thinking_budget == budget and provider.effort == effort:
            return provider
        key = ("variant", id(provider), budget, effort)
        variant = self._providers.get(key)
        if variant is None:
            variant = copy.copy(provider)  # the same client, on the same loop
            try:
                variant.thinking_budget = budget
                variant.effort = effort
            except ValueError as exc:
                raise SessionError(one_line(str(exc))) from None
            self._providers[key] = variant
        return variant

    def _provider_key(self, kind: str, model: str, thinking: int | None) -> tuple[Any, ...]:
        """What a cached provider was built from: a key set (or changed) after a turn failed
        without one builds a new provider, with a client that has it."""
        cassette = self.settings.offline_cassette
        if kind == "offline":
            return (kind, model, thinking, cassette)
        return (kind, model, thinking, cassette, _environment_fingerprint(kind))

    async def _build_provider(self, kind: str, model: str) -> Provider:
        """Built on the background loop, where the provider's HTTP client will live."""
        cassette = self.settings.offline_cassette or None
        try:
            if kind == "auto":
                from ...providers.auto import select_default_provider

                return select_default_provider(cassette=cassette, model=model or None)
            if kind == "anthropic":
                from ...providers.anthropic import AnthropicProvider

                return AnthropicProvider(model or None)
            if kind == "openai":
                from ...providers.openai_compat import OpenAIProvider

                return OpenAIProvider(model or None)
            from ...providers.offline import OfflineProvider

            return OfflineProvider(cassette)
        except Exception as exc:  # a bad cassette, a missing SDK, one refusing to start
            raise SessionError(f"Cannot use provider {kind!r}: {one_line(str(exc))}") from None

    # -- conversations -----------------------------------------------------------------------

    @property
    def agent(self) -> Agent:
        """The default chat's ``Agent`` (created on first use)."""
        return self.chat(DEFAULT_CHAT)

    def chat(self, name: str = DEFAULT_CHAT) -> Agent:
        """The agent of chat ``name``, created on first use."""
        check_chat_name(name)
        primary = self._primary()
        agent = self._chats.get(name)
        if agent is None:
            agent = self._new_agent(primary)
            self._chats[name] = agent
        return agent

    def existing_chat(self, name: str) -> Agent:
        """The agent of a chat that exists; a ``SessionError`` naming the chats otherwise."""
        agent = self._chats.get(check_chat_name(name))
        if agent is not None:
            return agent
        if not self._chats and name == DEFAULT_CHAT:
            return self.agent
        known = ", ".join(self._chats) or DEFAULT_CHAT
        raise SessionError(f"No chat named {name!r}; chats: {known}")

    def chats(self) -> list[ChatSummary]:
        """Every chat: its name, how many messages it holds, the tokens it used."""
        return [
            ChatSummary(name, len(agent.messages), agent.usage)
            for name, agent in self._chats.items()
        ]

    def reset(self, name: str | None = None) -> list[str]:
        """Empty chat ``name`` (every chat when ``None``); the names of the chats emptied."""
        if name is None:
            for agent in self._chats.values():
                agent.clear_context()
            return list(self._chats)
        if self._chats or name != DEFAULT_CHAT:
            self.existing_chat(name).clear_context()
        return [name]

    # -- tools and policies (what %agent_tools and the tool panel act on) ---------------------

    @property
    def registry(self) -> ToolRegistry:
        """The tool registry every chat shares (the toolbox's)."""
        return self.toolbox.registry

    @property
    def toolbox(self) -> Toolbox:
        """The tools, policies, tool context and MCP servers every chat shares."""
        self._primary()
        assert self._toolbox is not None
        return self._toolbox

    def get_policy(self, name: str) -> Policy:
        return self.toolbox.get_policy(name)

    def set_policy(self, name: str, policy: Policy) -> None:
        """Set the approval policy of tool ``name`` (for every chat: they share one gate)."""
        self.toolbox.set_policy(name, policy)

    # -- building the toolbox and the agents ---------------------------------------------------

    def _primary(self) -> Agent:
        """The default chat's agent, with the toolbox up to date with the settings."""
        primary = self._chats.get(DEFAULT_CHAT)
        if primary is not None and not self._stale:
            return primary
        workspace = self.workspace_path()
        if not workspace.is_dir():
            raise SessionError(f"The workspace {str(workspace)!r} is not an existing folder")
        context = ToolContext(workspace)
        context.shell_network = self.settings.shell_network
        tools = self._builtin_tools(context)
        toolbox = self._toolbox
        if toolbox is None:
            toolbox = Toolbox(context, ToolRegistry(), tool_timeout=self.settings.tool_timeout)
            toolbox.when_mcp_made(self._connect_mcp_hooks)
            self._toolbox = toolbox
        # new tools take their places; enabled states and policies stay (the destructive ones,
        # remove, run_bash and run_python, start off)
        toolbox.rebuild(context, tools, schemas_checked=True)  # our own tools
        self._sync_notebook_tools(toolbox)
        self._attach_journal(toolbox)
        self._stale = False
        if primary is None:
            primary = self._make_agent(self.provider(), toolbox)
            self._chats = {DEFAULT_CHAT: primary, **self._chats}
        context.bind(primary)  # until a chat runs (``run`` binds the chat that runs)
        for callback in self.on_rebuild:
            callback(primary)
        return primary

    def _connect_mcp_hooks(self, manager: MCPManager) -> None:
        """MCP servers reach the user through the session: forms asked in the running cell,
        sampling after an approval, the OAuth "Authorize" link (``mcp/client_features.py``).
        Called when the toolbox's manager is made (its first server), not before."""
        from ...mcp.sampling import make_sampler
        from ..asking.mcp_forms import mcp_form_asker

        hooks = manager.hooks
        hooks.ask = mcp_form_asker(self._questions())
        hooks.sample = make_sampler(
            lambda: self.provider(), self._approval_handler, spend=self._sampling_spend
        )
        hooks.open_authorization = self._open_authorization

    async def _open_authorization(self, url: str) -> None:
        text = "Authorize the MCP server (the link opens its sign-in page)"

        def show() -> None:
            if self._show_link is not None:
                self._show_link(text, url)
            else:
                self._notify(f"jupyter-agent: {text}: {url}")

        await self.bridge.call_on_main(show)

    def _builtin_tools(self, context: ToolContext) -> list[ExecutableTool]:
        """The default registry's tools and, with a namespace, the kernel's, for ``context``."""
        built = create_default_registry(
            context,
            allow_private_network=self.settings.allow_private_network,
            web_allow=self.egress,
        ).list_tools()
        if self.namespace is not None:
            built.extend(
                notebook_tools(context, self.namespace, self.bridge, self._shell, self._questions())
            )
        return built

    def _questions(self) -> UserQuestions:
        if self._make_questions is not None:
            return self._make_questions(self.bridge)
        return UserQuestions(self.bridge, self._shell, use_widgets=lambda: False)

    def _sync_notebook_tools(self, toolbox: Toolbox, connected: bool | None = None) -> None:
        """The notebook co-authoring tools on ``toolbox`` while a frontend is connected
        (``coauthor/link.py``); off it otherwise."""
        if self.namespace is None:
            return
        from ..coauthor.link import link_for
        from .notebook_tools import sync_cell_tools

        link = link_for(self._shell)
        if link is not None and self._notebook_changed not in link.on_change:
            link.on_change.append(self._notebook_changed)
        sync_cell_tools(toolbox, self.bridge, self._shell)

    def _notebook_changed(self, _connected: bool) -> None:
        if self._toolbox is not None:
            self._sync_notebook_tools(self._toolbox)

    def _new_agent(self, primary: Agent) -> Agent:
        """A chat's agent on the session's toolbox."""
        return self._make_agent(primary.provider, primary.toolbox)

    def _make_agent(self, provider: Provider, toolbox: Toolbox) -> Agent:
        settings = {name: getattr(self.settings, name) for name in _AGENT_SETTINGS}
        try:
            agent = Agent(
                provider,
                system_prompt=self.settings.system_prompt,
                approval_handler=self._approval_handler(),
                toolbox=toolbox,
                **settings,
            )
        except ValueError as exc:  # a setting out of range (the magics' traits refuse them)
            raise SessionError(one_line(str(exc))) from None
        toolbox.context.bind(agent)
        return agent

    def _approval_handler(self) -> ApprovalHandler | None:
        if self._approvals is None and self._make_approvals is not None:
            self._approvals = self._make_approvals(self.bridge)
        if self._approvals is not None and self.namespace is not None:
            from ..coauthor.link import link_for
            from ..coauthor.review import review_approvals

            if link_for(self._shell) is not None:  # a notebook cell's edit is asked as a diff
                return review_approvals(self._approvals, self._shell, self.bridge)
        return self._approvals

    # -- undo --------------------------------------------------------------------------------

    def _attach_journal(self, toolbox: Toolbox) -> None:
        """A change journal for the workspace, on the tools' shared context.

        It lives on disk (``.jupyter_agent/undo``), so a new one for the same workspace — after a
        settings change or a kernel restart — undoes what the earlier ones recorded.
        """
        context = toolbox.context
        try:
            context.journal = ChangeJournal(context.confinement)
            self._journal_problem = ""
            if self.namespace is not None:  # this notebook's turns (``undo_scope.py``)
                from ..coauthor.undo_scope import scope_journal

                scope_journal(context.journal, self._shell)
        except (WorkspaceError, OSError) as exc:  # e.g. a symlink planted where it would live
            context.journal = None
            self._journal_problem = one_line(str(exc))

    def journal(self) -> ChangeJournal | None:
        """The file journal, if the session's tools have one yet (nothing is created)."""
        return self._toolbox.context.journal if self._toolbox is not None else None

    def undo(self) -> str:
        """Restore what the file tools changed in the last ``%%agent`` cell, and the notebook's
        cells it inserted, edited or deleted (``coauthor/link.py``); says what it did."""
        from ..coauthor.link import newest_cell_change, undo_cells
        from ..coauthor.undo_scope import scope_journal

        journal = self.agent.context.journal
        scope_journal(journal, self._shell)  # this notebook's last turn, not the folder's
        cells = newest_cell_change(self._shell) if self.namespace is not None else None
        files = journal.pending_entry() if journal is not None else None
        # the newest of the two journals' entries; both when they are the same cell's
        if cells is not None and (files is None or files[0] == cells[0] or cells[1] >= files[1]):
            undone = undo_cells(self._shell)
            message = undone.message if undone is not None else "No cell changes to undo."
            if journal is not None and files is not None and files[0] == cells[0]:
                return f"{message}\n{journal.undo().message}"
            return message
        if journal is None:
            raise SessionError(f"Undo is not available: {self._journal_problem}")
        return journal.undo().message

    # -- a turn ------------------------------------------------------------------------------

    def expand(self, prompt: str) -> str:
        """``prompt`` with its ``{{name}}`` references to the user's variables brought in."""
        if self.namespace is None:
            return prompt
        expanded = expand_variables(prompt, self.namespace, self.settings.variable_budget)
        if expanded.redacted:
            self._notify(redaction_line(expanded.redacted))
        return expanded.text

    def run(
        self,
        prompt: str,
        *,
        chat: str = DEFAULT_CHAT,
        provider: str | None = None,
        model: str | None = None,
        max_turns: int | None = None,
        think: int | None = None,
        label: str | None = None,
        on_event: Callable[[object], None] | None = None,
        on_idle: Callable[[], None] | None = None,
        text_growth: float | None = None,
        budget: float | None = None,
        effort: str | None = None,
    ) -> TurnOutcome:
        """Run one turn of chat ``chat`` on the background loop, pumping events to ``on_event``.

        ``provider``/``model``/``max_turns``/``think`` apply to this turn only; each turn is one
        undo step, named ``label`` (the magics pass ``"cell N"``). Prints from the agent's
        threads reach the main thread in order (``console.py``). An interrupt ends the turn
        (``TurnOutcome.interrupted``) with the conversation valid; a failed model request is a
        ``SessionError``. ``text_growth``: see ``MainThreadBridge.run`` (0 for a terminal).
        """
        if max_turns is not None and max_turns < 1:
            raise SessionError("--max-turns must be at least 1")
        agent = self.chat(chat)
        # The project instructions are read for every turn: an edit counts from the next cell.
        system_prompt = with_instructions(self.settings.system_prompt, self.workspace_path())
        self._instructions_note.announce(self.workspace_path(), self._notify)  # name + hash
        if agent.system_prompt != system_prompt:
            agent.set_system_prompt(system_prompt)
        # Resolved for every turn: %config changes, a key set since, or this cell's options.
        agent.provider = self.provider(provider, model, think, effort)
        guard = self._spend_guard(budget)
        if guard is not None:  # requests that could pass the budget are not sent
            agent.provider = BudgetedProvider(agent.provider, guard)
        self._turn_guard = guard  # an MCP server's sampling during the turn counts here too
        agent.context.bind(agent)  # the shared tool context follows the chat that runs
        self._note_offline(agent.provider)
        # only a cell's own --model: a model set with `%agent model` said so when it was set
        self._note_ignored_model(agent.provider, model or "")
        self._turns += 1
        if agent.context.journal is not None:  # each turn is one step of %agent undo
            agent.context.journal.begin(label or f"turn {self._turns}")
        final: dict[str, Any] = {"text": None, "model": agent.provider.model}
        streamed: list[str] = []
        turn_starts_at = 0  # where this turn's text starts in ``streamed`` (a TextReset voids it)

        def handle(event: object) -> None:
            nonlocal turn_starts_at
            if isinstance(event, PrintedText):
                event.show()
                return
            if isinstance(event, TextDelta):
                streamed.append(event.text)
            elif isinstance(event, TextReset):
                del streamed[turn_starts_at:]
            elif isinstance(event, TurnStarted):
                turn_starts_at = len(streamed)
                if event.model:
                    final["model"] = event.model
            elif isinstance(event, TurnFinished):
                self.ledger.add(str(final["model"]), event.usage)
            elif isinstance(event, AgentFinished):
                final["text"] = event.text
            if on_event is not None:
                on_event(event)

        bridge = self.bridge
        turns = max_turns if max_turns is not None else self.settings.max_turns
        try:
            with OrderedConsole(bridge.post):
                outcome = bridge.run(
                    forward_events(agent.stream_chat(prompt, max_turns=turns), bridge),
                    handle,
                    on_idle=on_idle,
                    text_growth=text_growth,
                )
        except ProviderError as exc:
            raise ModelRequestError(one_line(str(exc))) from None
        finally:
            self._turn_guard = None
        if outcome.interrupted:
            return TurnOutcome(None, None, interrupted=True)
        text = final["text"] if final["text"] is not None else "".join(streamed)
        return TurnOutcome(text, self._answer_only(agent.provider, text))

    # -- the spend cap ------------------------------------------------------------------------

    @property
    def usage_by_model(self) -> dict[str, Usage]:
        """The tokens each model used this session (every request added up)."""
        return self.ledger.totals()

    def spent(self) -> float:
        """Dollars this session's replies cost, estimated from the price table."""
        return self.ledger.total_cost(user_prices(self.settings.prices))

    def _sampling_spend(self, provider: Provider) -> Provider:
        """``provider`` for an MCP server's sampling request: behind the running cell's guard
        (or, outside a cell, the caps of one), its cost in the session's usage."""
        guard = self._turn_guard
        if guard is None:
            guard = self._spend_guard(None) or SpendGuard(
                None, None, None, user_prices(self.settings.prices)
            )
        return BudgetedProvider(provider, guard, on_usage=self.ledger.add)

    def _spend_guard(self, budget: float | None) -> SpendGuard | None:
        """The caps of one cell (``budget``, else the setting) and of the session, if any."""
        cell = budget if budget is not None else self.settings.budget
        cap = self.settings.session_budget
        if cell is None and cap is None:
            return None
        self._budget_used = True
        left = None if cap is None else cap - self.spent()
        return SpendGuard(cell, left, cap, user_prices(self.settings.prices))

    def budget_report(self) -> str:
        """What ``%agent usage`` adds about the budgets: spent, and what is left."""
        cell, cap = self.settings.budget, self.settings.session_budget
        if cell is None and cap is None and not self._budget_used:
            return ""
        spent = self.spent()
        parts = [f"spent: {money(spent)} this session (estimated)"]
        if cap is not None:
            parts.append(f"session budget {money(cap)}, left {money(max(cap - spent, 0.0))}")
        if cell is not None:
            parts.append(f"cell budget {money(cell)}")
        return "; ".join(parts)

    def _note_offline(self, provider: Provider) -> None:
        if provider.name != "offline" or self._offline_noted:
            return
        from ...providers.offline import OfflineProvider

        inner = provider.inner if isinstance(provider, BudgetedProvider) else provider
        if not (isinstance(inner, OfflineProvider) and inner.notice):  # else its answers say so
            self._offline_noted = True
            self._notify(OFFLINE_NOTE)

    def _note_ignored_model(self, provider: Provider, requested: str) -> None:
        """A model named for the offline demo model: it answers the same whatever the name."""
        if provider.name == "offline" and requested and requested not in self._ignored_models:
            self._ignored_models.add(requested)
            self._notify(
                f"jupyter-agent: the offline demo model ignores --model {requested} (set "
                "ANTHROPIC_API_KEY to talk to Claude)."
            )

    @property
    def custom_provider(self) -> Provider | None:
        """The provider ``use_provider`` set, until a provider or model setting changes."""
        return self._custom_provider

    @staticmethod
    def _answer_only(provider: Provider, text: str) -> str:
        if provider.name != "offline":
            return text
        from ...providers.offline import answer_only

        return answer_only(text)

    def compact(self, chat: str = DEFAULT_CHAT) -> ContextCompacted | None:
        """Shorten chat ``chat`` now (old tool results to stubs, old turns summarised).

        ``None`` when there was nothing to shorten; ``SessionError`` if the summary request
        fails or the user interrupts it (the conversation is left as it was).
        """
        agent = self.existing_chat(chat)
        agent.provider = self.provider()
        try:
            outcome = self.bridge.run(agent.compact(), lambda _event: None)
        except ProviderError as exc:
            raise SessionError(f"Compacting failed: {one_line(str(exc))}") from None
        if outcome.interrupted:
            raise SessionError("Compacting was interrupted; the conversation is unchanged")
        return outcome.value

    # -- usage, saving, describing ------------------------------------------------------------

    def usage_report(self) -> str:
        report = usage_report(self.ledger, user_prices(self.settings.prices))
        budgets = self.budget_report()
        return f"{report}\n{budgets}" if budgets else report

    def save(self, path: str | os.PathLike[str], chat: str = DEFAULT_CHAT) -> int:
        """Write chat ``chat`` to ``path``; the number of messages written."""
        agent = self.existing_chat(chat)
        save_conversation(
            Path(path).expanduser(),
            agent.messages,
            system_prompt=self.settings.system_prompt,  # without the project instructions
            provider=agent.provider.name,
            model=agent.provider.model,
        )
        return len(agent.messages)

    def load(
        self,
        path: str | os.PathLike[str],
        chat: str = DEFAULT_CHAT,
        *,
        system_prompt: bool = False,
        note: Callable[[str], None] | None = None,
    ) -> int:
        """Replace chat ``chat``'s conversation with the signed one saved at ``path``.

        A saved system prompt that differs from the chat's is used only with
        ``system_prompt=True`` (it then applies to every chat); either way ``note`` is told.
        """
        saved = read_conversation(Path(path).expanduser())
        agent = self.chat(chat)
        agent.messages = saved.messages
        differs = saved.system_prompt is not None and saved.system_prompt != agent.system_prompt
        if differs and system_prompt:
            self.configure(system_prompt=saved.system_prompt)
            if note is not None:
                note("The system prompt is now the saved conversation's (for every chat).")
        elif differs and note is not None:
            note(
                "The saved conversation has a different system prompt; this session keeps its "
                f"own. To use the saved one: %agent load {os.fspath(path)} --system-prompt"
            )
        return len(saved.messages)

    def describe(self) -> list[tuple[str, str]]:
        """Rows about the live agents for ``%agent config``."""
        found = find_instructions(self.workspace_path())
        instructions = (
            "project instructions",
            found.describe()
            if found is not None
            else "none (AGENTS.md or CLAUDE.md at the workspace root)",
        )
        primary = self._chats.get(DEFAULT_CHAT)
        notebook: list[tuple[str, str]] = []
        if self.namespace is not None:
            from ..coauthor.link import coauthoring_state

            notebook = [("notebook co-authoring", coauthoring_state(self._shell))]
        if primary is None:
            return [
                instructions,
                ("agent", "not created yet (the first %%agent cell creates it)"),
                *notebook,
            ]
        registry = primary.registry
        enabled = [n for n in registry.get_tool_names() if registry.is_tool_enabled(n)]
        return [
            instructions,
            ("agent provider", f"{primary.provider.name} ({primary.provider.model})"),
            ("agent workspace", str(primary.context.workspace)),
            ("enabled tools", ", ".join(enabled) or "none"),
            (
                "chats",
                ", ".join(f"{n} ({len(a.messages)} messages)" for n, a in self._chats.items()),
            ),
            *notebook,
        ]

    # -- the end -----------------------------------------------------------------------------

    def close(self) -> None:
        """Release the providers' connections and stop the background loop."""
        background = self._background
        if background is None:
            return
        providers: Mapping[int, Provider] = {
            id(p): p for p in [*self._providers.values(), self._custom_provider] if p
        }
        toolbox = self._toolbox

        async def close_all() -> None:
            if toolbox is not None:
                with contextlib.suppress(Exception):
                    await toolbox.aclose()  # the MCP servers' processes end here
            for provider in providers.values():
                with contextlib.suppress(Exception):
                    await provider.aclose()

        with contextlib.suppress(Exception):
            background.run(close_all(), timeout=10)
        background.close()
        self._background = None
        self._bridge = None
        self._chats.clear()
        self._toolbox = None
        self._providers.clear()
        self._approvals = None
