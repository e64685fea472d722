"""Ask the agent while a cell runs: a ``%%agent`` cell answered on a kernel subshell.

A frontend that speaks subshells (JEP 91, ipykernel 7) sends a cell run while another executes
to a subshell, whose thread runs it at once (``runtime/subshell.py``). The question is about the
running cell — "how is the loss doing?" — so the answer may look and must not touch:

* **Read-only tools.** ``list_variables``, ``inspect_variable`` and ``notebook_history`` (which
  then shows the running cell, its output so far, last) run; every other enabled tool is offered
  to the model as it is but refused when called, with a result saying the main cell is still
  running — running code, writing files or changing cells beside a cell that runs could corrupt
  what that cell is doing, and ``run_python`` would have to wait for the main thread anyway.
* **Its own pump.** The turn runs on the session's background loop (its provider's connections
  live there) through a bridge of its own, pumped on the subshell's thread — the thread that owns
  this cell, where ipykernel 7 sends its output — so it neither waits for nor disturbs a turn the
  main shell may be pumping. Prints are not re-routed (the running cell prints on).
* **Its own conversation.** It starts from a copy of the chat's conversation when no turn of the
  session is running, and is not written back: the chat goes on as if it had not been asked.
* **Stop and interrupt.** Its Stop button stops this bridge only; the kernel's interrupt reaches
  the main thread only, so it ends the running cell and not this answer.

A one-line note at the top says that it ran beside a running cell.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

from ...agent.agent import Agent
from ...agent.toolbox import Toolbox
from ...errors import FailedModelRequest, ProviderError, SessionError, ToolFailure
from ...events import AgentFinished, TextDelta, TextReset, TurnFinished, TurnStarted
from ...tools.context import ToolContext
from ...tools.one_line import one_line
from ...tools.registry import ToolRegistry
from ..inert import visible
from ..kernel.history_tool import NotebookHistoryTool
from ..kernel.recorder import recorder_for
from ..runtime.bridge import MainThreadBridge, forward_events
from ..runtime.main_pause import PauseHold
from ..runtime.subshell import answer_where_sent, main_shell_busy, quick_handoffs, subshell_id
from ..spend.budget import BudgetedProvider
from ..views.render import Renderer
from ..views.rich_renderer import RichRenderer
from ..views.text_renderer import TextRenderer
from .head_start import HEAD_START_CAP_S, head_start_hold

if TYPE_CHECKING:
    from ...tools.base import ExecutableTool
    from ..session.managed import ManagedSettings
    from ..session.session import NotebookSession
    from .turn_options import TurnOptions


class BesideOwner(Protocol):
    """What an answer beside a running cell is asked through: the magics (``AgentMagics``)."""

    managed: ManagedSettings
    shell: Any
    render_interval: float

    @property
    def session(self) -> NotebookSession: ...

    def use_widgets(self) -> bool: ...

    def _run_turn(self, prompt: str) -> Any: ...


#: The tools that run beside a running cell: they read the namespace and the record, nothing else.
BESIDE_TOOLS = frozenset({"list_variables", "inspect_variable", "notebook_history"})

BESIDE_NOTE = (
    "↳ This answer ran beside a running cell (on a kernel subshell): it sees variables and "
    "output as they are now, with read-only tools; its Stop leaves that cell running."
)
IDLE_NOTE = "↳ This answer ran on a kernel subshell, with read-only tools."


@contextlib.contextmanager
def _usage_errors() -> Iterator[None]:
    """A session's refusal as a one-line ``UsageError``."""
    try:
        yield
    except SessionError as exc:
        raise UsageError(visible(str(exc))) from None


def refusal(name: str) -> str:
    """The result of a tool called beside a running cell that is not read-only."""
    return (
        f"{name} was not run: the main cell is still running, and this question is answered "
        "beside it, where only list_variables, inspect_variable and notebook_history work. "
        "Answer from what they show, or tell the user to ask again once the cell has finished."
    )


class _RefusedBeside:
    """A tool as the model knows it, refused when called beside a running cell."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.name = str(schema["name"])
        self._schema = schema

    def get_schema(self) -> dict[str, Any]:
        return self._schema

    async def execute(self, args: dict[str, object]) -> str:
        raise ToolFailure(refusal(self.name))


def beside_registry(session: NotebookSession, shell: Any) -> ToolRegistry:
    """The session's enabled tools for a turn beside a running cell (see the module docstring)."""
    shared = session.registry
    registry = ToolRegistry()
    recorder = recorder_for(shell)
    for tool in shared.list_tools():
        if not shared.is_tool_enabled(tool.name):
            continue
        chosen: ExecutableTool
        if tool.name == "notebook_history" and recorder is not None:
            context = session.toolbox.context
            chosen = NotebookHistoryTool(context, recorder, include_running=True)
        elif tool.name in BESIDE_TOOLS:
            chosen = tool
        else:
            chosen = _RefusedBeside(tool.get_schema())
        registry.register(chosen, schema_checked=True)
    return registry


def beside_agent(session: NotebookSession, shell: Any, options: TurnOptions) -> Agent:
    """An agent for one turn beside a running cell: the chat's provider and system prompt, a
    copy of its conversation when no turn runs, the beside tools."""
    chat = session.chat(options.chat)
    provider = session.provider(options.provider, options.model, options.think, options.effort)
    toolbox = Toolbox(ToolContext(session.workspace_path()), beside_registry(session, shell))
    agent = Agent(
        provider,
        system_prompt=chat.system_prompt,
        toolbox=toolbox,
        max_turns=options.max_turns or session.settings.max_turns,
        tool_timeout=session.settings.tool_timeout,
        max_result_chars=session.settings.max_result_chars,
        context_window=session.settings.context_window,
        max_parallel_tools=session.settings.max_parallel_tools,
    )
    toolbox.context.bind(agent)
    # the user's and an administrator's policies hold beside a running cell too: ``deny``
    # always wins, and ``ask`` is refused (the turn has no one to ask, so it fails closed)
    toolbox.gate.policies = dict(session.toolbox.gate.policies)
    toolbox.gate.ceiling = session.toolbox.gate.ceiling
    guard = session.spend_guard(options.budget)  # the cell's and session's caps hold here too
    if guard is not None:
        agent.provider = BudgetedProvider(agent.provider, guard)
    if not session.bridge.running:
        agent.messages = copy.deepcopy(chat.messages)
    return agent


async def _first_words_held(
    stream: AsyncIterator[object], hold: PauseHold
) -> AsyncIterator[object]:
    """``stream``, the running cell held again (on the session's loop) when the first words
    arrive, until they are shown (``head_start.py``)."""
    held = False
    try:
        async for event in stream:
            if not held and isinstance(event, TextDelta):
                held = True
                hold.renew(HEAD_START_CAP_S)
            yield event
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


def run_beside(
    session: NotebookSession,
    shell: Any,
    prompt: str,
    options: TurnOptions,
    *,
    rich: bool,
    render_interval: float,
) -> str | None:
    """Answer ``prompt`` beside the running cell, shown in this (subshell's) cell; the final
    text, or ``None`` when stopped."""
    print(BESIDE_NOTE if main_shell_busy(shell) else IDLE_NOTE)
    with _usage_errors():
        agent = beside_agent(session, shell, options)
    background = session.bridge.background
    bridge = MainThreadBridge(background)
    renderer: Renderer = (
        RichRenderer(render_interval, on_stop=bridge.request_stop) if rich else TextRenderer()
    )
    # the Stop button's click is answered on the subshell it is sent to, not behind this cell
    answer_where_sent(getattr(renderer, "_stop_button", None))
    final: dict[str, Any] = {"text": None, "model": agent.provider.model}
    streamed: list[str] = []
    # the running cell waits while this answer starts and until its first words show
    hold = head_start_hold(shell)
    events: AsyncIterator[object] = agent.stream_chat(prompt)
    if hold is not None:
        events = _first_words_held(events, hold)

    def handle(event: object) -> None:
        if isinstance(event, TextDelta):
            streamed.append(event.text)
        elif isinstance(event, TextReset):
            streamed.clear()
        elif isinstance(event, TurnStarted) and event.model:
            final["model"] = event.model
        elif isinstance(event, TurnFinished):
            session.ledger.add(str(final["model"]), event.usage)
        elif isinstance(event, AgentFinished):
            final["text"] = event.text
        renderer.handle(event)
        if hold is not None and isinstance(event, TextDelta) and not final.get("shown"):
            final["shown"] = True
            with contextlib.suppress(Exception):
                sys.stdout.flush()  # until the IOPub thread has sent the words out
            hold.release()

    try:
        with quick_handoffs():
            outcome = bridge.run(
                forward_events(events, bridge),
                handle,
                on_idle=renderer.tick,
                text_growth=None if rich else 0.0,
            )
    except ProviderError as exc:  # a failed request (or one over budget): one line
        renderer.close(interrupted=False)
        raise FailedModelRequest(one_line(str(exc))) from None
    except BaseException:
        renderer.close(interrupted=False)
        raise
    renderer.close(interrupted=outcome.interrupted)
    if outcome.interrupted:
        return None
    return str(final["text"]) if final["text"] is not None else "".join(streamed)


def ask_beside(magics: BesideOwner, prompt: str, options: TurnOptions) -> str | None:
    """``%%agent`` (or ``%agent ask``) on a subshell: the answer beside the running cell."""
    session = magics.session
    with _usage_errors():  # an administrator's locks hold beside a running cell too
        settings = vars(session.settings)
        magics.managed.check_turn(settings, options.provider, options.model, options.budget)
        expanded = session.expand(prompt)
    return run_beside(
        session,
        magics.shell,
        expanded,
        options,
        rich=magics.use_widgets(),
        render_interval=magics.render_interval,
    )


#: ``%%agent`` options that change the chat (which the running cell may be using): refused beside
#: a running cell, in one line.
CHAT_CHANGING = (("new", "--new"), ("plan", "--plan"), ("system", "--system"))


def beside_cell(magics: BesideOwner, prompt: str, args: Any) -> None:
    """A ``%%agent`` cell on a subshell, its parsed options ``args``: the answer beside the
    running cell; ``--out`` keeps it, options that change the chat are refused."""
    from .turn_options import TurnOptions

    for name, flag in CHAT_CHANGING:
        if getattr(args, name, None) not in (None, False):
            raise UsageError(
                f"%%agent {flag} changes the chat, which is not done beside a running cell; "
                "run it once that cell has finished"
            )
    options = TurnOptions(
        chat=args.chat,
        provider=args.provider,
        model=args.model,
        max_turns=args.max_turns,
        think=args.think,
        budget=args.budget,
        effort=args.effort,
    )
    answer = ask_beside(magics, prompt, options)
    if args.out is not None and answer is not None and magics.shell is not None:
        magics.shell.user_ns[args.out] = answer  # the user's own request, not a tool's


def ask_command(magics: BesideOwner, rest: str) -> None:
    """%agent ask TEXT — a question from a line; beside a running cell on a subshell."""
    from .turn_options import TurnOptions

    prompt = rest.strip()
    if len(prompt) >= 2 and prompt[0] == prompt[-1] and prompt[0] in "\"'":
        prompt = prompt[1:-1].strip()
    if not prompt:
        raise UsageError('%agent ask needs a question: %agent ask "how is the loop doing?"')
    if subshell_id(magics.shell) is not None:
        ask_beside(magics, prompt, TurnOptions())
        return
    with _usage_errors():
        expanded = magics.session.expand(prompt)
    magics._run_turn(expanded)
