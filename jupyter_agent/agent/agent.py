"""``Agent``: the tool loop between a model and the tools of a registry.

One ``stream_chat`` is a loop of named steps. **Request**: check the conversation fits the context
window (compact it if not, ``context_window.py``), send it, stream the reply. **Decide**: the
reply's stop reason picks the next step from ``STOP_REASONS`` — run its tool calls, continue
a paused turn, finish, or answer its tool calls with errors without running them (a reply cut off
by ``max_tokens`` or a refusal may carry half-written arguments: those never act). **Run tools**:
one ``ToolRound`` (``tool_round.py``) takes the reply's calls through the toolbox's policy gate,
runs them and answers them all in one message, in the model's order. Then the next request, until
the model is done or ``max_turns`` is reached.

The tools themselves — registry, policies, the tools' context, MCP servers — belong to a
``Toolbox`` (``toolbox.py``) that several agents may share (the chats of a notebook); the
agent's ``add_tool``, ``set_policy``, ``add_mcp_server``, ... delegate to it.

Whatever ends a chat early — a cancelled task, ``KeyboardInterrupt``, a closed event stream, a
failed request — the conversation is repaired before the exception leaves, so the next request
is one the API accepts (see ``conversation.py``). Every ``tool_use`` id in ``messages`` is valid
for the Messages API and unique, whichever provider produced it.

The *final text* of a chat is every ``TextDelta`` of that chat joined: the text of all its model
turns (separated by a blank line) plus any note the agent adds (the ``max_turns`` notice). It is
what ``chat`` returns and what ``AgentFinished.text`` holds. Thinking is never part of it.
"""

from __future__ import annotations

import enum
import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, NamedTuple

from ..approvals import ApprovalHandler, Policy
from ..errors import ContextOverflowError, ProviderError
from ..events import (
    AgentError,
    AgentEvent,
    AgentFinished,
    ContextCompacted,
    StopKind,
    TextDelta,
    TextReset,
    ThinkingDelta,
    TurnFinished,
    TurnStarted,
    Usage,
)
from ..providers.base import ModelRequest, ModelResponse, Provider, closing_stream
from ..tools.base import ExecutableTool
from ..tools.context import ToolContext
from ..tools.registry import ToolRegistry
from . import conversation
from .chat_state import Call, ChatState
from .context_window import ContextWindow
from .gate import PolicyGate
from .tokens import is_overflow
from .tool_round import DEFAULT_MAX_PARALLEL_TOOLS, ToolRound
from .toolbox import DEFAULT_TOOL_TIMEOUT, Toolbox
from .transcript import render_transcript

#: The tool ``save_context`` runs.
SAVE_SESSION_CONTEXT_TOOL = "save_session_context"
#: Characters of one tool result the model sees by default.
DEFAULT_MAX_RESULT_CHARS = 100_000


class Step(enum.Enum):
    """What the loop does after a reply."""

    #: Run the reply's tool calls, then send their results.
    RUN_TOOLS = "run tools"
    #: The server paused a long turn: send the conversation again so the model goes on.
    CONTINUE = "continue"
    #: The model is done.
    FINISH = "finish"
    #: Cut off by the output limit: tool calls are answered with errors (not run) and the model
    #: is told to retry with smaller input; a reply without calls finishes.
    RETRY_SMALLER = "retry smaller"
    #: A refusal or an unknown reason: tool calls are answered with errors and the chat ends.
    STOP = "stop"


class StopRule(NamedTuple):
    """What a stop reason means: the loop's next step, and how a chat it ends says it ended."""

    step: Step
    kind: StopKind


#: Every stop reason the Messages API (beta included) gives, and what it means. A test checks
#: that this covers the installed SDK's ``StopReason`` literals; a reason not listed (a newer
#: API) stops the chat without running the reply's calls.
STOP_REASONS: dict[str, StopRule] = {
    "tool_use": StopRule(Step.RUN_TOOLS, "other"),
    "end_turn": StopRule(Step.FINISH, "end_turn"),
    "stop_sequence": StopRule(Step.FINISH, "end_turn"),
    "pause_turn": StopRule(Step.CONTINUE, "other"),
    # the server compacted the conversation and paused: send it again and the model goes on
    "compaction": StopRule(Step.CONTINUE, "other"),
    "max_tokens": StopRule(Step.RETRY_SMALLER, "max_tokens"),
    "model_context_window_exceeded": StopRule(Step.RETRY_SMALLER, "max_tokens"),
    "refusal": StopRule(Step.STOP, "refusal"),
}
UNKNOWN_STOP = StopRule(Step.STOP, "other")

#: Continuations of paused turns in a row before the chat ends anyway.
MAX_PAUSE_CONTINUATIONS = 10


class Agent:
    """A conversation with a model that can use the tools of its ``toolbox``.

    ``registry``: the tools (a new ``Toolbox`` holds it); ``toolbox``: a toolbox shared with other
    agents instead (its registry, policies, context and MCP servers). ``tool_timeout``: seconds
    one tool call may run (``None``: no limit; it is the toolbox's); ``max_result_chars``: the
    longest tool result the model sees (cut in the middle, marked); ``context_window``: the
    model's window in tokens (``None``: the documented one, ``tokens.context_window_for``);
    ``max_parallel_tools``: calls of one reply that run at the same time.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        workspace: str | os.PathLike[str] = ".",
        system_prompt: str = "",
        max_turns: int = 20,
        registry: ToolRegistry | None = None,
        approval_handler: ApprovalHandler | None = None,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        context_window: int | None = None,
        toolbox: Toolbox | None = None,
        max_parallel_tools: int = DEFAULT_MAX_PARALLEL_TOOLS,
    ) -> None:
        _check_max_turns(max_turns)
        if toolbox is not None and registry is not None and registry is not toolbox.registry:
            raise ValueError("pass a registry or a toolbox (which has its registry), not both")
        if max_parallel_tools < 1:
            raise ValueError(f"max_parallel_tools must be at least 1, not {max_parallel_tools}")
        if tool_timeout is not None and tool_timeout <= 0:
            raise ValueError(f"tool_timeout must be positive or None, not {tool_timeout}")
        if max_result_chars is not None and max_result_chars < 1000:
            raise ValueError(f"max_result_chars must be at least 1000, not {max_result_chars}")
        if context_window is not None and context_window < 1000:
            raise ValueError(f"context_window must be at least 1000 tokens, not {context_window}")
        self.provider: Provider = provider
        self.max_turns = max_turns
        self.approval_handler: ApprovalHandler | None = approval_handler
        self.max_result_chars = max_result_chars
        self.max_parallel_tools = max_parallel_tools
        #: ``None``: the provider's model's documented window.
        self.context_window = context_window
        self.messages: list[dict[str, Any]] = []
        self.usage = Usage()
        self._system_prompt = system_prompt
        self.window = ContextWindow(self)
        # Each chat takes a token; clean-up code of a chat that a newer one superseded (an
        # abandoned stream, say) must not touch the conversation any more.
        self._chat_token = 0
        if toolbox is None:
            context = ToolContext(workspace)
            context.bind(self)
            toolbox = Toolbox(context, registry)
        self.toolbox = toolbox
        self.tool_timeout = tool_timeout

    def __repr__(self) -> str:
        return (
            f"<Agent provider={self.provider.name}:{self.provider.model} "
            f"messages={len(self.messages)} tools={len(self.get_tools())}>"
        )

    # -- the toolbox's parts, by their old names --------------------------------------------

    @property
    def registry(self) -> ToolRegistry:
        """The toolbox's registry (assigning one replaces it for every agent of the toolbox)."""
        return self.toolbox.registry

    @registry.setter
    def registry(self, registry: ToolRegistry) -> None:
        self.toolbox.registry = registry

    @property
    def gate(self) -> PolicyGate:
        return self.toolbox.gate

    @property
    def context(self) -> ToolContext:
        return self.toolbox.context

    @property
    def tool_timeout(self) -> float | None:
        """Seconds one tool call may run (``None``: no limit): the toolbox's."""
        return self.toolbox.tool_timeout

    @tool_timeout.setter
    def tool_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError(f"tool_timeout must be positive or None, not {seconds}")
        self.toolbox.tool_timeout = seconds

    # -- state the tools can read ------------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, text: str) -> None:
        self._system_prompt = text

    def set_system_prompt(self, text: str) -> None:
        """Replace the system prompt (the next request uses it)."""
        self._system_prompt = text

    @property
    def session_context(self) -> str:
        """The conversation so far as a Markdown transcript."""
        return render_transcript(self.messages)

    def clear_context(self) -> None:
        """Forget the conversation (``usage`` keeps counting)."""
        self._chat_token += 1
        self.messages.clear()
        self.window.forget()

    async def save_context(self, reason: str) -> str:
        """Write the session context to its file through the ``save_session_context`` tool."""
        return await self.registry.execute(SAVE_SESSION_CONTEXT_TOOL, {"reason": reason})

    # -- tools --------------------------------------------------------------------------------

    def get_tools(self) -> list[dict[str, Any]]:
        """Schemas of the enabled tools, as the model sees them."""
        return self.registry.get_enabled_schemas()

    def add_tool(self, tool: ExecutableTool | Callable[..., Any]) -> ExecutableTool:
        """Register a tool; a plain function is wrapped with ``@tool`` first. Returns the tool."""
        if not isinstance(tool, ExecutableTool):
            if not callable(tool):
                raise TypeError(f"not a tool or a function: {tool!r}")
            from ..tools.decorator import tool as make_tool

            tool = make_tool(tool)
        self.toolbox.add_tool(tool)
        return tool

    def remove_tool(self, name: str) -> None:
        self.toolbox.remove_tool(name)

    def enable_tool(self, name: str) -> None:
        self.registry.enable(name)

    def disable_tool(self, name: str) -> None:
        self.registry.disable(name)

    def get_policy(self, name: str) -> Policy:
        """The policy set for ``name``, else ``ask`` for destructive tools and ``allow``."""
        return self.toolbox.get_policy(name)

    def set_policy(self, name: str, policy: Policy) -> None:
        self.toolbox.set_policy(name, policy)

    # -- the context window -------------------------------------------------------------------

    @property
    def effective_context_window(self) -> int:
        """``context_window``, or the documented window of the provider's model."""
        return self.window.size

    def estimate_tokens(self) -> int:
        """About how many input tokens the next request would carry."""
        return self.window.estimate()

    async def compact(self) -> ContextCompacted | None:
        """Compact the conversation now (``%agent compact``); None if there is nothing to do.

        Earlier tool results become stubs and earlier turns a summary; the latest turn stays.
        """
        return await self.window.compact_now()

    async def add_mcp_server(
        self,
        name: str,
        *,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> list[str]:
        """Start an MCP server (``command``: stdio; ``url``: streamable HTTP), add its tools.

        Returns the tools' names, ``{name}__{tool}``. Options: ``policy`` (default ``ask``),
        ``read_resources``, ``timeout``, ``oauth``, ``roots`` (folders offered as MCP roots;
        none by default). The servers are the toolbox's (every agent sharing it has their
        tools). See ``jupyter_agent.mcp``.
        """
        return await self.toolbox.mcp.add_server(
            name, command=command, env=env, url=url, headers=headers, **options
        )

    async def remove_mcp_server(self, name: str) -> None:
        """Remove an MCP server's tools and stop it."""
        await self.toolbox.mcp.remove(name)

    # -- chatting -----------------------------------------------------------------------------

    async def chat(self, prompt: str, *, max_turns: int | None = None) -> str:
        """Run the tool loop for ``prompt`` and return the final text.

        ``max_turns`` overrides the agent's default for this chat only.
        """
        text = ""
        async with aclosing(self.stream_chat(prompt, max_turns=max_turns)) as events:
            async for event in events:
                if isinstance(event, AgentFinished):
                    text = event.text
        return text

    async def stream_chat(
        self, prompt: str, *, max_turns: int | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run the tool loop for ``prompt``, yielding events as they happen.

        ``AgentFinished`` is the last event. A failed request yields ``AgentError`` and raises
        ``ProviderError``; in every case ``messages`` is left valid for the next chat.
        ``max_turns`` overrides the agent's default for this chat only.
        """
        if not prompt.strip():
            raise ValueError("the prompt is empty")
        turns = self.max_turns if max_turns is None else max_turns
        _check_max_turns(turns)
        self._chat_token += 1
        token = self._chat_token
        # Whatever an earlier chat left behind (an interrupt that never reached its clean-up).
        if conversation.repair(self.messages):
            self.window.forget()
        state = ChatState(max_turns=turns, used_ids=conversation.normalise_ids(self.messages))
        before = [dict(message) for message in self.messages]
        conversation.add_user_text(self.messages, prompt)
        try:
            async with aclosing(self._loop(state, token)) as events:
                async for event in events:
                    yield event
        except BaseException:
            if self._chat_token == token:
                self._recover(state, before)
            raise

    def _recover(self, state: ChatState, before: list[dict[str, Any]]) -> None:
        """Leave a valid conversation after a chat that ended early."""
        partial = "".join(state.turn_text).rstrip()
        if partial:
            # what the user saw of an interrupted answer stays in the conversation
            self.messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": partial}]}
            )
            state.produced = True
        if not state.produced:
            # nothing happened: forget the prompt, so that asking again is not a duplicate
            self.messages[:] = before
            self.window.forget()
        conversation.repair(self.messages, missing_result=conversation.INTERRUPTED)

    async def _loop(self, state: ChatState, token: int) -> AsyncGenerator[AgentEvent, None]:
        """The named steps: request → decide → (run tools | continue | finish)."""
        while True:
            state.turns += 1
            turn = state.turns
            yield TurnStarted(turn, self.provider.model)
            response: ModelResponse | None = None
            async with aclosing(self._request(state, token)) as reply:
                async for event in reply:
                    if isinstance(event, ModelResponse):
                        response = event
                    else:
                        yield event
            assert response is not None
            content, calls = self._clean_content(response.content, state)
            for delta in self._store_reply(state, content):
                yield delta
            yield TurnFinished(turn, response.stop_reason, response.usage)

            reason = response.stop_reason or ""
            rule = STOP_REASONS.get(reason, UNKNOWN_STOP)
            step = rule.step
            if step is Step.CONTINUE and state.pauses < MAX_PAUSE_CONTINUATIONS and not calls:
                state.continuing = True
                state.pauses += 1
                continue
            state.continuing = False
            state.pauses = 0
            if step is Step.RUN_TOOLS and calls:
                async with aclosing(self._run_tools(calls, token)) as tool_events:
                    async for event in tool_events:
                        yield event
            elif calls:
                # a reply that did not stop for tool_use may hold half-written calls: none runs
                for event in self._refuse_all(calls, reason, token):
                    yield event
                if step is not Step.RETRY_SMALLER:
                    yield AgentFinished(state.text, rule.kind, turn, state.usage)
                    return
            else:
                yield AgentFinished(state.text, rule.kind, turn, state.usage)
                return
            if turn >= max(1, state.max_turns):
                note = (
                    f"*(Stopped after {turn} model turns, the `max_turns` limit. Ask to continue, "
                    "or raise `max_turns`.)*"
                )
                yield state.note(note)
                yield AgentFinished(state.text, "max_turns", turn, state.usage)
                return

    async def _request(
        self, state: ChatState, token: int
    ) -> AsyncGenerator[AgentEvent | ModelResponse, None]:
        """Step *request*: fit the context window, send, stream; the reply comes last.

        When the API says the prompt is too long, the conversation is compacted and the request
        sent once more.
        """
        provider = self.provider
        overflow: ProviderError | None = None
        while True:
            tools = self.registry.get_enabled_schemas()
            try:
                compacted = await self.window.fit(overflow=overflow, tools=tools)
            except ContextOverflowError as exc:
                yield AgentError(str(exc), exc)
                raise
            if compacted is not None:
                yield compacted
            elif overflow is not None:  # compaction could not help: the API's answer stands
                yield AgentError(str(overflow), overflow)
                raise overflow
            request = ModelRequest(
                system=self._system_prompt, messages=list(self.messages), tools=tools
            )
            response: ModelResponse | None = None
            state.turn_text = []
            try:
                async with closing_stream(provider.stream(request)) as stream:
                    async for item in stream:
                        if isinstance(item, ModelResponse):
                            response = item
                        elif isinstance(item, ThinkingDelta):
                            yield item
                        elif isinstance(item, TextDelta) and item.text:
                            for delta in state.text_deltas(item.text):
                                yield delta
                        elif isinstance(item, TextReset):
                            # the provider retries the reply: its text so far is void
                            state.reset_turn()
                            yield item
            except ProviderError as exc:
                if overflow is None and not state.turn_text and is_overflow(exc):
                    overflow = exc  # compact (once) and send again
                    continue
                yield AgentError(str(exc), exc)
                raise
            except Exception as exc:
                error = ProviderError(
                    f"{provider.name} request failed: {type(exc).__name__}: {exc}"
                )
                yield AgentError(str(error), exc)
                raise error from exc
            if response is None:
                error = ProviderError(f"{provider.name} ended its stream without a complete reply")
                yield AgentError(str(error), error)
                raise error
            self._check_token(token)
            usage = response.usage
            self.window.record(
                tools,
                usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens,
            )
            state.usage = state.usage + usage
            self.usage = self.usage + usage
            yield response
            return

    def _store_reply(self, state: ChatState, content: list[dict[str, Any]]) -> list[TextDelta]:
        """Add the reply to the conversation; the deltas of a reply whose text did not stream."""
        deltas: list[TextDelta] = []
        if not state.turn_text:
            # a provider that does not stream text: the text still reaches the UI once
            text = "".join(b["text"] for b in content if b.get("type") == "text")
            if text:
                deltas = state.text_deltas(text)
        state.turn_text = []
        if not content:
            return deltas
        last = self.messages[-1] if self.messages else None
        if state.continuing and last is not None and last.get("role") == "assistant":
            last["content"] = [*conversation.content_blocks(last), *content]
        else:
            self.messages.append({"role": "assistant", "content": content})
        state.produced = True
        return deltas

    def _check_token(self, token: int) -> None:
        if token != self._chat_token:
            raise RuntimeError(
                "this chat was superseded (a newer chat started or the context was cleared)"
            )

    @staticmethod
    def _clean_content(
        content: list[dict[str, Any]], state: ChatState
    ) -> tuple[list[dict[str, Any]], list[Call]]:
        """The reply as it goes into the conversation, and its tool calls.

        Empty text blocks are dropped (the API refuses them); a ``tool_use`` whose input is not
        an object is stored with ``{}`` (the model learns what went wrong from its error result);
        an id that is missing, not valid for the API or already used in the conversation is
        replaced by a fresh one, so every call can be answered and the conversation can move
        between providers. Thinking blocks stay as they came (with their signatures).
        """
        cleaned: list[dict[str, Any]] = []
        calls: list[Call] = []
        for block in content:
            kind = block.get("type")
            if kind == "text":
                if str(block.get("text", "")).strip():
                    cleaned.append(dict(block))
            elif kind == "tool_use":
                call_id = str(block.get("id") or "")
                if not conversation.VALID_TOOL_ID.match(call_id) or call_id in state.used_ids:
                    call_id = conversation.fresh_tool_id()
                state.used_ids.add(call_id)
                raw_input = block.get("input")
                name = str(block.get("name", ""))
                calls.append(Call(call_id, name, raw_input))
                stored = dict(block, id=call_id, name=name)
                stored["input"] = raw_input if isinstance(raw_input, dict) else {}
                cleaned.append(stored)
            else:
                cleaned.append(dict(block))
        return cleaned, calls

    # -- tool calls ---------------------------------------------------------------------------

    def _round(self, calls: list[Call]) -> ToolRound:
        return ToolRound(
            calls,
            self.toolbox,
            self.approval_handler,
            self.max_result_chars,
            self.max_parallel_tools,
        )

    def _refuse_all(self, calls: list[Call], reason: str, token: int) -> list[AgentEvent]:
        """Answer every call of a reply that did not stop for ``tool_use``, running none."""
        tool_round = self._round(calls)
        events = tool_round.refuse_all(reason)
        self._check_token(token)
        conversation.add_user_content(self.messages, tool_round.answer_blocks())
        return events

    async def _run_tools(self, calls: list[Call], token: int) -> AsyncGenerator[AgentEvent, None]:
        """Run the calls of one reply (``ToolRound``); answer them all in one user message.

        The answer is added however the round ends, unless a newer chat superseded this one.
        """
        tool_round = self._round(calls)
        try:
            async with aclosing(tool_round.run()) as events:
                async for event in events:
                    yield event
        except BaseException:
            if token == self._chat_token:
                conversation.add_user_content(self.messages, tool_round.answer_blocks())
            raise
        self._check_token(token)
        conversation.add_user_content(self.messages, tool_round.answer_blocks())


def _check_max_turns(max_turns: int) -> None:
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, not {max_turns}")
