"""``Agent``: the tool loop between a model and the tools of a registry.

One ``stream_chat`` sends the conversation to the provider, streams the answer as events, runs
the tool calls of each reply concurrently through ``registry.call`` and sends their results back,
until the model stops asking for tools or ``max_turns`` is reached. Whatever ends a chat early — a
cancelled task, ``KeyboardInterrupt``, a closed event stream, a failed request — the
conversation is repaired before the exception leaves, so the next request is one the API accepts
(see ``conversation.py``).

The *final text* of a chat is every ``TextDelta`` of that chat joined: the text of all its model
turns (separated by a blank line) plus any note the agent adds (the ``max_turns`` notice). It is
what ``chat`` returns and what ``AgentFinished.text`` holds.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError
from ..events import (
    AgentError,
    AgentEvent,
    AgentFinished,
    StopKind,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
    Usage,
)
from ..providers.base import ModelRequest, ModelResponse, Provider, ProviderEvent
from ..tools.base import ExecutableTool, ToolResult, capabilities_of
from ..tools.context import ToolContext
from ..tools.registry import ToolRegistry
from . import conversation
from .approvals import POLICIES, ApprovalHandler, ApprovalRequest, Decision, Policy
from .transcript import render_transcript

#: The tool ``save_context`` runs.
SAVE_SESSION_CONTEXT_TOOL = "save_session_context"

#: ``_refusal`` result: the policy says to ask the user.
_ASK = "ask"

_STOP_KINDS: dict[str, StopKind] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


@dataclass
class _ChatState:
    """Book-keeping of one chat, read by the clean-up code when the chat ends early."""

    deltas: list[str] = field(default_factory=list)
    #: Model text of the turn being streamed, not yet in ``messages``.
    turn_text: list[str] = field(default_factory=list)
    #: Whether this chat added an assistant message to the conversation.
    produced: bool = False
    turns: int = 0
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return "".join(self.deltas)


@dataclass(frozen=True, slots=True)
class _Call:
    id: str
    name: str
    #: What the model sent; not a dict when its JSON could not be parsed.
    raw_input: object

    @property
    def input(self) -> dict[str, Any]:
        return self.raw_input if isinstance(self.raw_input, dict) else {}


class Agent:
    """A conversation with a model that can use the tools of ``registry``."""

    def __init__(
        self,
        provider: Provider,
        *,
        workspace: str | os.PathLike[str] = ".",
        system_prompt: str = "",
        max_turns: int = 20,
        registry: ToolRegistry | None = None,
        approval_handler: ApprovalHandler | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, not {max_turns}")
        self.provider: Provider = provider
        self.max_turns = max_turns
        self.approval_handler: ApprovalHandler | None = approval_handler
        self.messages: list[dict[str, Any]] = []
        self.usage = Usage()
        self._system_prompt = system_prompt
        self._policies: dict[str, Policy] = {}
        # Each chat takes a token; clean-up code of a chat that a newer one superseded (an
        # abandoned stream, say) must not touch the conversation any more.
        self._chat_token = 0
        self.context = ToolContext(workspace)
        self.context.bind(self)
        if registry is None:
            from ..tools.factory import create_default_registry

            registry = create_default_registry(self.context)
        self.registry: ToolRegistry = registry

    def __repr__(self) -> str:
        return (
            f"<Agent provider={self.provider.name}:{self.provider.model} "
            f"messages={len(self.messages)} tools={len(self.get_tools())}>"
        )

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
        self.registry.register(tool)
        return tool

    def remove_tool(self, name: str) -> None:
        self.registry.unregister(name)
        self._policies.pop(name, None)

    def enable_tool(self, name: str) -> None:
        self.registry.enable(name)

    def disable_tool(self, name: str) -> None:
        self.registry.disable(name)

    def get_policy(self, name: str) -> Policy:
        """The policy set for ``name``, else ``ask`` for destructive tools and ``allow``."""
        if name in self._policies:
            return self._policies[name]
        tool = self.registry.get_tool(name)
        return "ask" if capabilities_of(tool).destructive else "allow"

    def set_policy(self, name: str, policy: Policy) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
        self._policies[name] = policy

    # -- chatting -----------------------------------------------------------------------------

    async def chat(self, prompt: str) -> str:
        """Run the tool loop for ``prompt`` and return the final text."""
        text = ""
        async with aclosing(self.stream_chat(prompt)) as events:
            async for event in events:
                if isinstance(event, AgentFinished):
                    text = event.text
        return text

    async def stream_chat(self, prompt: str) -> AsyncGenerator[AgentEvent, None]:
        """Run the tool loop for ``prompt``, yielding events as they happen.

        ``AgentFinished`` is the last event. A failed request yields ``AgentError`` and raises
        ``ProviderError``; in every case ``messages`` is left valid for the next chat.
        """
        if not prompt.strip():
            raise ValueError("the prompt is empty")
        self._chat_token += 1
        token = self._chat_token
        # Whatever an earlier chat left behind (an interrupt that never reached its clean-up).
        conversation.repair(self.messages)
        before = [dict(message) for message in self.messages]
        conversation.add_user_text(self.messages, prompt)
        state = _ChatState()
        try:
            async with aclosing(self._loop(state, token)) as events:
                async for event in events:
                    yield event
        except BaseException:
            if self._chat_token == token:
                self._recover(state, before)
            raise

    def _recover(self, state: _ChatState, before: list[dict[str, Any]]) -> None:
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
        conversation.repair(self.messages, missing_result=conversation.INTERRUPTED)

    async def _loop(self, state: _ChatState, token: int) -> AsyncGenerator[AgentEvent, None]:
        while True:
            state.turns += 1
            turn = state.turns
            provider = self.provider
            yield TurnStarted(turn, provider.model)
            request = ModelRequest(
                system=self._system_prompt,
                messages=list(self.messages),
                tools=self.registry.get_enabled_schemas(),
            )
            response: ModelResponse | None = None
            state.turn_text = []
            try:
                async with _closing(provider.stream(request)) as stream:
                    async for item in stream:
                        if isinstance(item, ModelResponse):
                            response = item
                        elif item.text:
                            for delta in self._text(state, item.text):
                                yield delta
            except ProviderError as exc:
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

            content, calls = _clean_content(response.content, turn)
            if not state.turn_text:
                # a provider that does not stream text: the text still reaches the UI once
                text = "".join(b["text"] for b in content if b.get("type") == "text")
                if text:
                    for delta in self._text(state, text):
                        yield delta
            state.turn_text = []
            if content:
                self.messages.append({"role": "assistant", "content": content})
                state.produced = True
            state.usage = state.usage + response.usage
            self.usage = self.usage + response.usage
            yield TurnFinished(turn, response.stop_reason, response.usage)

            if not calls:
                stop = _STOP_KINDS.get(response.stop_reason or "", "other")
                yield AgentFinished(state.text, stop, turn, state.usage)
                return
            async with aclosing(self._run_tools(calls, token)) as tool_events:
                async for event in tool_events:
                    yield event
            if turn >= max(1, self.max_turns):
                note = (
                    f"*(Stopped after {turn} model turns, the `max_turns` limit. Ask to continue, "
                    "or raise `agent.max_turns`.)*"
                )
                yield self._note(state, note)
                yield AgentFinished(state.text, "max_turns", turn, state.usage)
                return

    def _text(self, state: _ChatState, text: str) -> list[TextDelta]:
        """The deltas for model text: a blank line first when an earlier turn said something."""
        deltas = []
        if not state.turn_text and state.deltas and not state.text.endswith("\n\n"):
            separator = "\n\n" if not state.text.endswith("\n") else "\n"
            state.deltas.append(separator)
            deltas.append(TextDelta(separator))
        state.turn_text.append(text)
        state.deltas.append(text)
        deltas.append(TextDelta(text))
        return deltas

    @staticmethod
    def _note(state: _ChatState, note: str) -> TextDelta:
        text = state.text
        if text and not text.endswith("\n\n"):
            note = ("\n" if text.endswith("\n") else "\n\n") + note
        state.deltas.append(note)
        return TextDelta(note)

    def _check_token(self, token: int) -> None:
        if token != self._chat_token:
            raise RuntimeError(
                "this chat was superseded (a newer chat started or the context was cleared)"
            )

    # -- tool calls ---------------------------------------------------------------------------

    async def _run_tools(self, calls: list[_Call], token: int) -> AsyncGenerator[AgentEvent, None]:
        """Run the calls of one reply concurrently; answer them all in one user message."""
        results: dict[str, ToolResult] = {}
        tasks: dict[str, asyncio.Task[ToolResult]] = {}
        try:
            for call in calls:
                refusal = self._refusal(call)
                if refusal is _ASK:
                    # the UI shows the call first, then asks the user about it
                    yield ToolCallStarted(call.id, call.name, call.input)
                    refusal = await self._ask(call)
                    if refusal is None:
                        tasks[call.id] = self._start(call)
                elif refusal is None:
                    tasks[call.id] = self._start(call)
                    yield ToolCallStarted(call.id, call.name, call.input)
                else:
                    yield ToolCallStarted(call.id, call.name, call.input)
                if refusal is not None:
                    results[call.id] = ToolResult(refusal, is_error=True)
                    yield _finished(call, results[call.id])
            names = {call.id: call for call in calls}
            pending = {task: call_id for call_id, task in tasks.items()}
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: list(tasks.values()).index(t)):
                    call_id = pending.pop(task)
                    results[call_id] = task.result()
                    yield _finished(names[call_id], results[call_id])
        except BaseException:
            try:
                for task in tasks.values():
                    task.cancel()
                await asyncio.gather(*tasks.values(), return_exceptions=True)
            finally:
                for call in calls:
                    if call.id in results:
                        continue
                    maybe_task = tasks.get(call.id)
                    if maybe_task is None:
                        results[call.id] = ToolResult(conversation.NOT_RUN, is_error=True)
                        continue
                    task = maybe_task
                    if task.done() and not task.cancelled():
                        error = task.exception()
                        results[call.id] = (
                            task.result()
                            if error is None
                            else ToolResult(conversation.INTERRUPTED, is_error=True)
                        )
                    else:
                        results[call.id] = ToolResult(conversation.INTERRUPTED, is_error=True)
                if token == self._chat_token:
                    self._answer(calls, results)
            raise
        self._check_token(token)
        self._answer(calls, results)

    def _start(self, call: _Call) -> asyncio.Task[ToolResult]:
        return asyncio.create_task(
            self.registry.call(call.name, call.input), name=f"tool {call.name} {call.id}"
        )

    def _refusal(self, call: _Call) -> str | None:
        """Why ``call`` must not run (bad input, policy), ``_ASK`` to ask the user, or None."""
        if not isinstance(call.raw_input, dict):
            shown = str(call.raw_input)
            shown = shown if len(shown) <= 300 else shown[:300] + "…"
            return (
                f"Error: invalid arguments for {call.name}: the input was not a JSON object "
                f"({shown}). Call the tool again with a JSON object that matches its input_schema."
            )
        if not self.registry.is_tool_enabled(call.name):
            return None  # the registry explains unknown and disabled tools itself
        policy = self.get_policy(call.name)
        if policy == "allow":
            return None
        if policy == "deny":
            return (
                f"Error: {call.name} was not run: the user's policy for this tool is 'deny'. "
                "Do not retry it; find another way or ask the user."
            )
        return _ASK

    async def _ask(self, call: _Call) -> str | None:
        """Ask the approval handler about ``call``: None if approved, else the refusal."""
        handler = self.approval_handler
        if handler is None:
            return (
                f"Error: {call.name} was not run: it needs the user's approval and no approval "
                "handler is available, so the call was denied."
            )
        try:
            decision = await handler(ApprovalRequest(call.id, call.name, dict(call.input)))
        except Exception as exc:
            decision = Decision(False, f"the approval request failed ({exc})")
        if decision.approved:
            return None
        reason = f" The user said: {decision.reason}" if decision.reason else ""
        return f"Error: the user declined this call of {call.name}; it was not run.{reason}"

    def _answer(self, calls: list[_Call], results: dict[str, ToolResult]) -> None:
        blocks = [
            conversation.tool_result(
                call.id, results[call.id].content, is_error=results[call.id].is_error
            )
            for call in calls
        ]
        conversation.add_user_content(self.messages, blocks)


@asynccontextmanager
async def _closing(
    iterator: AsyncIterator[ProviderEvent],
) -> AsyncGenerator[AsyncIterator[ProviderEvent], None]:
    """Close a provider's stream however the agent leaves it (its HTTP response too)."""
    try:
        yield iterator
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()


def _finished(call: _Call, result: ToolResult) -> ToolCallFinished:
    return ToolCallFinished(
        call.id, call.name, result.content, result.is_error, result.duration_s, result.images
    )


def _clean_content(
    content: list[dict[str, Any]], turn: int
) -> tuple[list[dict[str, Any]], list[_Call]]:
    """The reply as it goes into the conversation, and its tool calls.

    Empty text blocks are dropped (the API refuses them); a ``tool_use`` whose input is not an
    object is stored with ``{}`` (the model learns what went wrong from its error result); a
    missing or repeated id gets a local one, so every call can be answered.
    """
    cleaned: list[dict[str, Any]] = []
    calls: list[_Call] = []
    seen: set[str] = set()
    for index, block in enumerate(content):
        kind = block.get("type")
        if kind == "text":
            if str(block.get("text", "")).strip():
                cleaned.append(dict(block))
        elif kind == "tool_use":
            call_id = str(block.get("id") or "")
            if not call_id or call_id in seen:
                call_id = f"toolu_local_{turn}_{index}"
            seen.add(call_id)
            raw_input = block.get("input")
            name = str(block.get("name", ""))
            calls.append(_Call(call_id, name, raw_input))
            stored = dict(block, id=call_id, name=name)
            stored["input"] = raw_input if isinstance(raw_input, dict) else {}
            cleaned.append(stored)
        else:
            cleaned.append(dict(block))
    return cleaned, calls
