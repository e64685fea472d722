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
  stay) and cached by what tells them apart (kind, model, thinking budget, ...;
  ``provider_cache.py``); ``use_provider`` plugs in one of your own.
- **MCP servers** belong to the toolbox (``toolbox.mcp``), their tools in its registry; they end
  with ``close``.
- **Usage** per model, for ``%agent usage``, and the spend caps (``session_spend.py``); a turn's
  text and usage are gathered from its events (``turn_transcript.py``).
- **Undo**: the workspace's change journal (``tools/guard/journal.py``) on the tools' shared
  context, an entry per turn (per ``%%agent`` cell), whichever chat ran it (``turn_undo.py``).

Every refusal is a ``SessionError`` with a one-line message (the magics show it as a
``UsageError``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...agent.agent import Agent
from ...agent.toolbox import Toolbox
from ...approvals import ApprovalHandler, Policy
from ...errors import ModelRequestError, ProviderError, SessionError
from ...events import ContextCompacted, Usage
from ...providers.base import Provider
from ...tools.base import ExecutableTool
from ...tools.context import ToolContext
from ...tools.factory import create_default_registry
from ...tools.guard.egress import EgressHosts
from ...tools.guard.journal import ChangeJournal
from ...tools.one_line import one_line
from ...tools.project_files import with_instructions
from ...tools.registry import ToolRegistry
from ..asking.user_questions import UserQuestions
from ..runtime.bridge import BackgroundLoop, MainThreadBridge, forward_events
from ..runtime.console import OrderedConsole
from ..spend.budget import BudgetedProvider, SpendGuard
from .config_rows import config_rows
from .conversation_file import read_conversation, save_conversation
from .instructions_note import InstructionsNote
from .notebook_tools import notebook_tools
from .prompt_redaction import redaction_line
from .prompt_vars import expand_variables
from .provider_cache import ProviderCache
from .session_spend import SessionSpend
from .settings import DEFAULT_CHAT, SETTING_NAMES, SessionSettings, check_chat_name
from .turn_transcript import TurnOutcome, TurnTranscript
from .turn_undo import open_journal, undo_turn

if TYPE_CHECKING:
    from ...mcp.manager import MCPManager

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
class ChatSummary:
    name: str
    messages: int
    usage: Usage


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
        self._providers = ProviderCache(self.settings, notify, lambda: self.bridge.background)
        self._journal_problem = ""
        self._turns = 0
        #: Called with the default chat's agent whenever the toolbox is (re)built.
        self.on_rebuild: list[Callable[[Agent], None]] = []
        #: What the session's model requests cost, and the caps on it.
        self._spend = SessionSpend(self.settings)
        #: Wraps the next turns' provider (a replayable cell keeps or replays its turn: replay/).
        self.wrap_provider: Callable[[Provider], Provider] | None = None
        #: What every model request of the session used, per model and prompt-size tier.
        self.ledger = self._spend.ledger

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
                self._providers.custom = None
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
        self._providers.custom = provider
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
        return self._providers.provider(kind, model, think, effort)

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
            lambda: self.provider(), self._approval_handler, spend=self._spend.sampling
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
        """A change journal for the workspace, on the tools' shared context (``turn_undo.py``)."""
        in_notebook = self.namespace is not None
        self._journal_problem = open_journal(toolbox.context, self._shell, in_notebook)

    def journal(self) -> ChangeJournal | None:
        """The file journal, if the session's tools have one yet (nothing is created)."""
        return self._toolbox.context.journal if self._toolbox is not None else None

    def undo(self) -> str:
        """Restore what the file tools changed in the last ``%%agent`` cell, and the notebook's
        cells it inserted, edited or deleted (``coauthor/link.py``); says what it did."""
        journal = self.agent.context.journal
        return undo_turn(journal, self._shell, self.namespace is not None, self._journal_problem)

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
        guard = self._spend.guard(budget)
        if guard is not None:  # requests that could pass the budget are not sent
            agent.provider = BudgetedProvider(agent.provider, guard)
        if self.wrap_provider is not None:
            agent.provider = self.wrap_provider(agent.provider)
        self._spend.turn_guard = guard  # an MCP server's sampling during the turn counts here too
        agent.context.bind(agent)  # the shared tool context follows the chat that runs
        self._providers.note_offline(agent.provider)
        # only a cell's own --model: a model set with `%agent model` said so when it was set
        self._providers.note_ignored_model(agent.provider, model or "")
        self._turns += 1
        if agent.context.journal is not None:  # each turn is one step of %agent undo
            agent.context.journal.begin(label or f"turn {self._turns}")
        transcript = TurnTranscript(agent.provider.model, self.ledger, on_event)
        bridge = self.bridge
        turns = max_turns if max_turns is not None else self.settings.max_turns
        try:
            with OrderedConsole(bridge.post):
                outcome = bridge.run(
                    forward_events(agent.stream_chat(prompt, max_turns=turns), bridge),
                    transcript.handle,
                    on_idle=on_idle,
                    text_growth=text_growth,
                )
        except ProviderError as exc:
            raise ModelRequestError(one_line(str(exc))) from None
        finally:
            self._spend.turn_guard = None
        if outcome.interrupted:
            return TurnOutcome(None, None, interrupted=True)
        return transcript.outcome(agent.provider)

    # -- the spend cap ------------------------------------------------------------------------

    @property
    def usage_by_model(self) -> dict[str, Usage]:
        """The tokens each model used this session (every request added up)."""
        return self.ledger.totals()

    def spent(self) -> float:
        """Dollars this session's replies cost, estimated from the price table."""
        return self._spend.spent()

    def spend_guard(self, budget: float | None) -> SpendGuard | None:
        """The caps of one cell (``budget``, else the setting) and of the session, if any."""
        return self._spend.guard(budget)

    def budget_report(self) -> str:
        """What ``%agent usage`` adds about the budgets: spent, and what is left."""
        return self._spend.budget_report()

    @property
    def custom_provider(self) -> Provider | None:
        """The provider ``use_provider`` set, until a provider or model setting changes."""
        return self._providers.custom

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
        return self._spend.usage_report()

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
        """Rows about the live agents for ``%agent config`` (``config_rows.py``)."""
        in_notebook = self.namespace is not None
        return config_rows(self.workspace_path(), self._chats, self._shell, in_notebook)

    # -- the end -----------------------------------------------------------------------------

    def close(self) -> None:
        """Release the providers' connections and stop the background loop."""
        background = self._background
        if background is None:
            return
        providers = self._providers.every_provider()
        toolbox = self._toolbox

        async def close_all() -> None:
            if toolbox is not None:
                with contextlib.suppress(Exception):
                    await toolbox.aclose()  # the MCP servers' processes end here
            for provider in providers:
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
