"""``AnthropicProvider``: Claude through the official ``anthropic`` SDK.

The SDK does the hard parts — HTTP, SSE parsing, the accumulation of a streamed message, and the
retries (with backoff and ``retry-after``) for overloaded and rate-limited requests. This module
adds prompt caching (breakpoints on the system prompt, the tool definitions, the end of the
conversation and the end of the previous request, so each turn of a tool loop — however many
parallel calls it made — re-reads the earlier ones from the cache; ``_anthropic_cache.py``),
extended thinking (``thinking_budget``), a cap on every retry wait (``_retry_wait.py``: a
``retry-after`` of an hour is not honoured, whoever built the client), retries of an
``overloaded_error`` that arrives inside a 200 stream (after text was shown too: a ``TextReset``
takes that text back), and turns the stream into ``TextDelta``/``ThinkingDelta``/``ModelResponse``
and the SDK's exceptions into ``ProviderError`` with a message that names the API's error type.

Server-side threads (on by default against Anthropic's own API, as in the SDK's tool runner;
off by default through any other ``base_url``, see below): a request that extends an earlier one
continues its thread and sends only the new messages (a thread per conversation, so the chats of
a notebook, which share one provider, each keep theirs); any other is sent whole under a new
thread (``_anthropic_threads.py`` says how it tells, cheaply and conservatively). The agent
still owns the whole conversation: the thread only saves re-sending and re-serialising what the
server already holds. A thread error (the server lost the thread,
the reply was already continued) sends the request whole under a new thread; a server or proxy
that does not take threads (``thread_unsupported_request``, or a client error naming the field)
gets the same request whole without one, and ``threads`` turns ``False``. A proxy could also drop
the field without a word and pass on only the new messages — the model would answer the next
cell having forgotten the conversation — so through a ``base_url`` other than
``api.anthropic.com`` threads are off unless ``threads=True`` says the proxy passes them on.
Summary requests (compaction) never touch the thread.

One event loop per client (``_event_loops.py``): a provider that built its client builds a fresh
one when ``asyncio.run`` is called again, so a script can chat in several ``asyncio.run`` calls; a
client you passed in is used as is, with a ``RuntimeWarning`` when the loop changes (create it
inside the loop that uses it, or keep one loop, as the notebook magics do).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import warnings
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..events import TextDelta, TextReset, ThinkingDelta, Usage
from ._anthropic_cache import CACHE_CONTROL, mark_last_block, with_cache_breakpoints
from ._anthropic_prefix import PrefixKeeper
from ._anthropic_thinking import ThinkingPlan, default_max_tokens, plan_thinking
from ._anthropic_threads import (
    CREATE,
    MAX_THREADS,
    REPLAY_ERROR_CODES,
    UNSUPPORTED_ERROR_CODE,
    Thread,
    continuable,
    error_code,
    is_anthropic_api,
    new_thread,
    open_stream,
    refuses_threads,
)
from ._event_loops import CLIENT_ON_NEW_LOOP_WARNING, LoopTracker
from ._retry_wait import DEFAULT_MAX_RETRY_WAIT, RetryWaitCap, backoff, capped_copy
from .base import ModelRequest, ModelResponse, ProviderEvent
from .model_facts import (
    CURRENT_MODEL,
    EFFORT_LEVELS,
    FACTS,
    ModelFacts,
    built_in,
    request_facts,
    unknown_facts,
)

if TYPE_CHECKING:
    import anthropic

#: The newest Claude Sonnet that the installed SDK knows; ``JUPYTER_AGENT_MODEL`` overrides it.
DEFAULT_MODEL = "claude-sonnet-5-5"
MODEL_ENV_VAR = "JUPYTER_AGENT_MODEL"
#: ``max_tokens`` of a model the package knows nothing about (else it comes from the model's
#: facts: thinking at the chosen effort plus the answer, ``_anthropic_thinking.py``).
DEFAULT_MAX_TOKENS = 8192
#: The SDK's default number of retries of a failed request.
DEFAULT_MAX_RETRIES = 2
#: The API's smallest thinking budget.
MIN_THINKING_BUDGET = 1024
#: Error types that may arrive inside a 200 stream and are worth another try.
_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error"})

#: How long ``aclose`` lets a Models API lookup on its way finish.
LOOKUP_GRACE_S = 2.0
_log = logging.getLogger(__name__)


class AnthropicProvider:
    """Streams replies from the Messages API."""

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        max_tokens: int | None = None,
        cache: bool = True,
        thinking_budget: int | None = None,
        effort: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
        threads: bool | None = None,
    ) -> None:
        self.model: str = model or os.environ.get(MODEL_ENV_VAR) or DEFAULT_MODEL
        self.max_tokens = max_tokens
        self.effort = effort
        #: Mark the system prompt, the tools and the conversation for prompt caching.
        self.cache = cache
        self.thinking_budget = thinking_budget
        #: Retries of a failed request, for a client this provider builds (a client passed in
        #: keeps its own ``max_retries``; an overloaded stream is retried that many times too).
        #: No wait before a retry is longer than ``max_retry_wait`` seconds.
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._owns_client = client is None
        # With no client: the SDK reads ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and
        # ANTHROPIC_BASE_URL from the environment.
        self.client: anthropic.AsyncAnthropic = client if client is not None else self._new_client()
        self._loops = LoopTracker()
        #: A client passed in, and the copy of it that sends (its retry waits capped).
        self._capped: tuple[object, float, anthropic.AsyncAnthropic] | None = None
        self._threads_setting = threads
        #: What the server holds of the latest conversations, one thread each (the most recent
        #: last, at most ``MAX_THREADS``): the chats of a notebook share this provider, and each
        #: goes on with its own. A thread is out of the table while its request is in flight, and
        #: does not come back after a failed or cancelled one.
        self._threads: list[Thread] = []
        #: Each conversation's prefix kept append-only (``_anthropic_prefix.py``).
        self._prefix = PrefixKeeper()
        #: Notices already given (each is said once).
        self._said: set[str] = set()

    @property
    def threads(self) -> bool:
        """Whether a request that extends an earlier one continues its server-side thread (only
        the new messages are sent). Unless set, on for a client of Anthropic's own API and off
        through another ``base_url`` (a proxy might drop the field without a word) — decided by
        the client the provider has when it sends. Turned off when the server refuses threads."""
        if self._threads_setting is not None:
            return self._threads_setting
        return is_anthropic_api(self.client)

    @threads.setter
    def threads(self, value: bool | None) -> None:
        self._threads_setting = value

    @property
    def max_tokens(self) -> int:
        """The largest reply: as set, else room for thinking at the chosen effort plus the
        answer, within the model's maximum (the model's facts)."""
        if self._max_tokens is not None:
            return self._max_tokens
        facts = self.facts()
        return default_max_tokens(facts, self._plan(facts))

    @max_tokens.setter
    def max_tokens(self, value: int | None) -> None:
        self._max_tokens = value

    @property
    def effort(self) -> str | None:
        """``low``, ``medium``, ``high``, ``xhigh`` or ``max``; ``None``: the model's own."""
        return self._effort

    @effort.setter
    def effort(self, value: str | None) -> None:
        if value is not None and value not in EFFORT_LEVELS:
            raise ValueError(
                f"effort must be one of {', '.join(EFFORT_LEVELS)} (or None); got {value!r}"
            )
        self._effort = value

    def facts(self) -> ModelFacts:
        """What the model accepts: the Models API's answer once it is in, else the built-in
        table (``model_facts.py``)."""
        known = FACTS.known(self._sending_client(), self.model)
        if known is not None:
            return known
        return built_in(self.model) or unknown_facts(self.model)

    def _begin_lookup(self, client: anthropic.AsyncAnthropic) -> None:
        """Start the Models API lookup (once per kernel and model) after the first token shows:
        a fresh kernel's first token does not share the loop with its request, its import of
        the SDK's models resource and the parsing of its answer."""
        with contextlib.suppress(RuntimeError):  # a stream closed outside a running loop
            FACTS.start(client, self.model)

    async def lookup_facts(self) -> ModelFacts:
        """The model's facts, waiting for the Models API lookup (started now if need be); the
        built-in table's if the Models API cannot answer."""
        client = self._client_for_running_loop()
        await FACTS.start(client, self.model)
        return self.facts()

    def _plan(self, facts: ModelFacts) -> ThinkingPlan:
        return plan_thinking(facts, self.thinking_budget, self.effort)

    @property
    def thinking_budget(self) -> int | None:
        """Tokens the model may think before it answers (extended thinking); ``None``: off."""
        return self._thinking_budget

    @thinking_budget.setter
    def thinking_budget(self, budget: int | None) -> None:
        if budget == 0 and not isinstance(budget, bool):
            budget = None  # 0 means off, as an integer setting's default can say
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_THINKING_BUDGET
        ):
            raise ValueError(
                f"thinking_budget must be a whole number of tokens, at least {MIN_THINKING_BUDGET} "
                f"(the API's minimum), or None (or 0) to turn thinking off; got {budget!r}"
            )
        self._thinking_budget = budget

    def _new_client(self) -> anthropic.AsyncAnthropic:
        client: anthropic.AsyncAnthropic = _capped_client_class()(
            max_retries=self.max_retries, max_retry_wait=self.max_retry_wait
        )
        return client

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r})"

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.stream`` for ``request`` (caching applied)."""
        facts = self.facts()
        plan = self._plan(facts)
        max_tokens = self._max_tokens or default_max_tokens(facts, plan)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": min(max_tokens, facts.max_tokens),
            "messages": request.messages,
        }
        if plan.thinking is not None:
            params["thinking"] = dict(plan.thinking)
            budget = plan.thinking.get("budget_tokens")
            if isinstance(budget, int) and params["max_tokens"] <= budget:
                # thinking counts against max_tokens: leave the answer its room
                params["max_tokens"] = min(budget + max_tokens, facts.max_tokens)
        if plan.output_config is not None:
            params["output_config"] = dict(plan.output_config)
        if request.system:
            system: dict[str, Any] = {"type": "text", "text": request.system}
            if self.cache:
                system["cache_control"] = dict(CACHE_CONTROL)
            params["system"] = [system]
        if request.tools:
            tools = [dict(tool) for tool in request.tools]
            if self.cache:
                tools[-1]["cache_control"] = dict(CACHE_CONTROL)
            params["tools"] = tools
        if self.cache and request.messages:
            params["messages"] = with_cache_breakpoints(request.messages)
        return params

    def _client_for_running_loop(self) -> anthropic.AsyncAnthropic:
        """``client``, rebuilt first if this provider built it and the event loop changed."""
        if self._loops.moved():
            if self._owns_client:
                # the old client's connections belong to the old loop; leave them to it
                self.client = self._new_client()
            else:
                message = CLIENT_ON_NEW_LOOP_WARNING.format(provider="AnthropicProvider")
                warnings.warn(message, RuntimeWarning, stacklevel=3)
        return self._sending_client()

    def _sending_client(self) -> anthropic.AsyncAnthropic:
        """The client requests go through: ``client``, or for a client that is not of the class
        this provider builds, one copy of it whose retry waits are capped (``capped_copy``)."""
        client = self.client
        if isinstance(client, RetryWaitCap):
            return client
        wait = self.max_retry_wait
        if self._capped is None or self._capped[0] is not client or self._capped[1] != wait:
            self._capped = (client, wait, capped_copy(client, wait))
        return self._capped[2]

    def _threading(self, request: ModelRequest) -> bool:
        """Whether ``request`` goes on a server-side thread (a summary is a one-off request)."""
        return (
            self.threads
            and request.purpose == "chat"
            and bool(getattr(self.client, "_supports_message_threads", False))
        )

    def _thread_key(self, request: ModelRequest) -> tuple[object, ...]:
        """What a thread keeps fixed: a request with other values starts a new one."""
        return (self.model, request.system, request.tools, self.thinking_budget, self.effort)

    def _take_thread(
        self, messages: list[dict[str, Any]], key: tuple[object, ...]
    ) -> tuple[Thread | None, int | None]:
        """The thread ``messages`` extend, out of the table, and how many of them it holds."""
        threads = self._threads
        for index in range(len(threads) - 1, -1, -1):
            start = threads[index].held_prefix(messages, key)
            if start is not None:
                return threads.pop(index), start
        return None, None

    def _keep_thread(self, thread: Thread | None) -> None:
        if thread is not None:
            self._threads.append(thread)
            del self._threads[:-MAX_THREADS]

    def _continue_params(self, request: ModelRequest, start: int) -> dict[str, Any]:
        """The keyword arguments of a thread continuation: only ``request.messages[start:]``,
        with a cache breakpoint on the last block (the thread holds the system prompt, the tools
        and the rest of the conversation)."""
        params = self.build_params(ModelRequest("", [], []))
        messages = request.messages[start:]
        if self.cache and messages:
            messages = list(messages)
            mark_last_block(messages, len(messages) - 1)
        params["messages"] = messages
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        import anthropic

        client = self._client_for_running_loop()
        facts, notices = request_facts(client, self.model)
        plan = self._plan(facts)
        for notice in [*notices, *plan.notices]:
            if notice not in self._said:
                self._said.add(notice)
                yield ThinkingDelta(notice, kind="notice")
        rendered = self._prefix.render(
            request.system,
            request.tools,
            request.messages,
            facts,
            keep_layout=request.purpose == "chat",
        )
        request = ModelRequest(rendered.system, rendered.messages, rendered.tools, request.purpose)
        betas = sorted({*plan.betas, *rendered.betas})
        threading = self._threading(request)
        key = self._thread_key(request) if threading else ()
        # taken for the time of the request: one that fails or is cancelled leaves no thread to
        # continue (the server may or may not hold its reply), so the next one starts afresh
        thread, start = self._take_thread(request.messages, key) if threading else (None, None)
        if thread is not None and start is not None:
            params = self._continue_params(request, start)
            thread_field: dict[str, str] | None = {
                "type": "continue",
                "previous_message_id": thread.reply_id,
            }
        else:
            params = self.build_params(request)
            thread_field = dict(CREATE) if threading else None
        #: The error of the threaded request that a request without a thread is trying again.
        refused: anthropic.APIStatusError | None = None
        attempt = 0
        try:
            while True:
                streamed = False
                try:
                    async with open_stream(client, params, thread_field, betas) as stream:
                        async for event in stream:
                            if event.type == "text" and event.text:
                                streamed = True
                                yield TextDelta(event.text)
                            elif event.type == "thinking" and event.thinking:
                                streamed = True
                                yield ThinkingDelta(event.thinking, kind=plan.streamed_as)
                            if streamed:
                                self._begin_lookup(client)
                        message = await stream.get_final_message()
                    break
                except anthropic.APIStatusError as exc:
                    if thread_field is not None and exc.status_code != 200:
                        code = error_code(exc.body)
                        if code in REPLAY_ERROR_CODES and start is not None:
                            # the server no longer holds the thread as we left it: send it all
                            start = None
                            params, thread_field = self.build_params(request), dict(CREATE)
                            continue
                        if code == UNSUPPORTED_ERROR_CODE:
                            self.threads = False
                        if code == UNSUPPORTED_ERROR_CODE or refuses_threads(exc):
                            # a server (or proxy) without threads: the same request, whole,
                            # without one
                            start, refused = None, exc
                            params, thread_field = self.build_params(request), None
                            continue
                    # an error event inside a 200 stream: the SDK does not retry it; a transient one
                    # is tried again, and what this attempt already showed is taken back first
                    # (``TextReset``: the retry's text replaces it)
                    if (
                        exc.status_code == 200
                        and exc.type in _RETRYABLE_STREAM_ERRORS
                        and attempt < client.max_retries
                    ):
                        attempt += 1
                        if streamed:
                            yield TextReset()
                        await asyncio.sleep(backoff(attempt, self.max_retry_wait))
                        if start is not None:
                            # the server may have begun the continuation: start a new thread
                            start = None
                            params, thread_field = self.build_params(request), dict(CREATE)
                        continue
                    raise ProviderError(_describe_status_error(exc, attempt)) from exc
                except anthropic.APITimeoutError as exc:
                    raise ProviderError(
                        "The request to Anthropic timed out (after the SDK's retries). Try again."
                    ) from exc
                except anthropic.APIConnectionError as exc:
                    cause = exc.__cause__
                    detail = f" ({type(cause).__name__}: {cause})" if cause else ""
                    raise ProviderError(
                        "Could not connect to the Anthropic API at "
                        f"{self.client.base_url}{detail}. Check the network (and "
                        "ANTHROPIC_BASE_URL if you set it)."
                    ) from exc
                except anthropic.AnthropicError as exc:
                    raise ProviderError(f"Anthropic request failed: {exc}") from exc
                except TypeError as exc:
                    if self._owns_client and not (
                        os.environ.get("ANTHROPIC_API_KEY")
                        or os.environ.get("ANTHROPIC_AUTH_TOKEN")
                    ):
                        raise ProviderError(
                            "No Anthropic credentials: set the ANTHROPIC_API_KEY environment "
                            "variable (or use the offline model)."
                        ) from exc
                    raise
                except ValueError as exc:
                    # the SDK could not parse a tool's streamed JSON input
                    raise ProviderError(
                        f"Anthropic sent a reply that could not be read: {exc}"
                    ) from exc
        finally:
            # (a reply without text or thinking, or one that failed)
            self._begin_lookup(client)

        if message.stop_reason is None:
            raise ProviderError(
                "The Anthropic stream ended before the reply was complete. Try again."
            )
        content: list[dict[str, Any]] = []
        for block in message.content:
            if block.type == "text":
                content.append({"type": "text", "text": block.text})
            elif block.type == "tool_use":
                content.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
            elif block.type == "thinking":
                # the signature lets the API verify the thinking when it comes back
                content.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
            elif block.type == "redacted_thinking":
                content.append({"type": "redacted_thinking", "data": block.data})
            else:
                # server-tool blocks go back to the API unchanged
                content.append(block.to_dict())
        self._prefix.record(rendered, self.model, content)
        if refused is not None and self.threads:
            # the whole request went through where the threaded one was refused
            self.threads = False
            _log.info(
                "Anthropic refused server-side threads; sending whole conversations: %s", refused
            )
        if thread_field is not None and continuable(message):
            if thread is not None and start is not None:
                # a continuation sends only dicts the check can follow (else it failed)
                self._keep_thread(thread.continuation(request.messages, message.id, content))
            else:
                self._keep_thread(new_thread(request.messages, key, message.id, content))
        usage = message.usage
        yield ModelResponse(
            content=content,
            stop_reason=message.stop_reason,
            usage=Usage(
                input_tokens=usage.input_tokens or 0,
                output_tokens=usage.output_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
            ),
            model=message.model,
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it (a client passed in is yours)."""
        if not self._owns_client:
            return
        if self._loops.elsewhere():
            # its connections belong to a loop that is not running here (an earlier
            # asyncio.run): they can't be closed from this one, and the old loop is gone
            return
        # a Models API lookup on its way finishes first (it is short), so that no request is cut
        # off mid-connection when the client closes
        lookup = FACTS.started(self.client, self.model)
        if lookup is not None and not lookup.done():
            with contextlib.suppress(Exception, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(lookup), LOOKUP_GRACE_S)
        await self.client.close()


@functools.cache
def _capped_client_class() -> Callable[..., anthropic.AsyncAnthropic]:
    """``anthropic.AsyncAnthropic`` whose retries wait at most ``max_retry_wait``."""
    import anthropic

    class AsyncAnthropicWithWaitCap(RetryWaitCap, anthropic.AsyncAnthropic):
        pass

    return AsyncAnthropicWithWaitCap


def _describe_status_error(exc: anthropic.APIStatusError, stream_retries: int = 0) -> str:
    kind = exc.type or "error"
    detail = str(exc.api_message or exc.message).strip().rstrip(".")
    where = "in the stream" if exc.status_code == 200 else str(exc.status_code)
    message = f"Anthropic API error {where} — {kind}: {detail}."
    hints = {
        401: " Check ANTHROPIC_API_KEY.",
        403: " The API key is not allowed to do this.",
        404: (
            " Check the model name (agent.provider.model or JUPYTER_AGENT_MODEL); a current "
            f"one is {CURRENT_MODEL}."
        ),
        413: " The conversation is too large; clear it with %agent reset.",
        429: " Rate limited even after the SDK's retries; wait a moment and try again.",
        529: " Anthropic is overloaded even after the SDK's retries; try again shortly.",
    }
    if exc.status_code == 200:
        tries = f" after {stream_retries + 1} attempts" if stream_retries else ""
        if kind == "overloaded_error":
            message += f" Anthropic is overloaded{tries}; try again shortly."
        elif tries:
            message += f" (failed{tries})"
    else:
        message += hints.get(exc.status_code, "")
    wait = exc.response.headers.get("retry-after")
    if exc.status_code in (429, 529) and wait:
        message += f" The API asked to wait {wait} s before retrying."
    if exc.request_id:
        message += f" (request id {exc.request_id})"
    return message
