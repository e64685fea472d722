"""``AnthropicProvider``: Claude through the official ``anthropic`` SDK.

The SDK does the hard parts — HTTP, SSE parsing, the accumulation of a streamed message, and the
retries (with backoff and ``retry-after``) for overloaded and rate-limited requests. This module
adds prompt caching (the system prompt, the tool definitions and the conversation so far are
marked ``cache_control: ephemeral``, so each turn of a tool loop re-reads the earlier ones from
the cache), turns the stream into ``TextDelta``/``ModelResponse`` and the SDK's exceptions into
``ProviderError`` with a message a notebook user can act on.

One event loop per client (``_event_loops.py``): a provider that built its client builds a fresh
one when ``asyncio.run`` is called again, so a script can chat in several ``asyncio.run`` calls; a
client you passed in is used as is, with a ``RuntimeWarning`` when the loop changes (create it
inside the loop that uses it, or keep one loop, as the notebook magics do).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from ..errors import ProviderError
from ..events import TextDelta, Usage
from ._event_loops import CLIENT_ON_NEW_LOOP_WARNING, LoopTracker
from .base import ModelRequest, ModelResponse, ProviderEvent

if TYPE_CHECKING:
    import anthropic

#: The newest Claude Sonnet that the installed SDK knows; ``JUPYTER_AGENT_MODEL`` overrides it.
DEFAULT_MODEL = "claude-sonnet-5-5"
MODEL_ENV_VAR = "JUPYTER_AGENT_MODEL"
DEFAULT_MAX_TOKENS = 8192

_CACHE_CONTROL = {"type": "ephemeral"}


class AnthropicProvider:
    """Streams replies from the Messages API."""

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        cache: bool = True,
    ) -> None:
        import anthropic

        self.model: str = model or os.environ.get(MODEL_ENV_VAR) or DEFAULT_MODEL
        self.max_tokens = max_tokens
        #: Mark the system prompt, the tools and the conversation for prompt caching.
        self.cache = cache
        self._owns_client = client is None
        # With no client: the SDK reads ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and
        # ANTHROPIC_BASE_URL from the environment; its default retries stay on.
        self.client: anthropic.AsyncAnthropic = (
            client if client is not None else anthropic.AsyncAnthropic()
        )
        self._loops = LoopTracker()

    def __repr__(self) -> str:
        return f"AnthropicProvider(model={self.model!r})"

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.stream`` for ``request`` (caching applied)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": request.messages,
        }
        if request.system:
            system: dict[str, Any] = {"type": "text", "text": request.system}
            if self.cache:
                system["cache_control"] = dict(_CACHE_CONTROL)
            params["system"] = [system]
        if request.tools:
            tools = [dict(tool) for tool in request.tools]
            if self.cache:
                tools[-1]["cache_control"] = dict(_CACHE_CONTROL)
            params["tools"] = tools
        if self.cache and request.messages:
            params["messages"] = _with_cache_breakpoints(request.messages)
        return params

    def _client_for_running_loop(self) -> anthropic.AsyncAnthropic:
        """``client``, rebuilt first if this provider built it and the event loop changed."""
        if self._loops.moved():
            if self._owns_client:
                import anthropic

                # the old client's connections belong to the old loop; leave them to it
                self.client = anthropic.AsyncAnthropic()
            else:
                message = CLIENT_ON_NEW_LOOP_WARNING.format(provider="AnthropicProvider")
                warnings.warn(message, RuntimeWarning, stacklevel=3)
        return self.client

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        import anthropic

        params = self.build_params(request)
        client = self._client_for_running_loop()
        try:
            async with client.messages.stream(**cast(Any, params)) as stream:
                async for event in stream:
                    if event.type == "text" and event.text:
                        yield TextDelta(event.text)
                message = await stream.get_final_message()
        except anthropic.APIStatusError as exc:
            raise ProviderError(_describe_status_error(exc)) from exc
        except anthropic.APITimeoutError as exc:
            raise ProviderError(
                "The request to Anthropic timed out (after the SDK's retries). Try again."
            ) from exc
        except anthropic.APIConnectionError as exc:
            cause = exc.__cause__
            detail = f" ({type(cause).__name__}: {cause})" if cause else ""
            raise ProviderError(
                f"Could not connect to the Anthropic API at {self.client.base_url}{detail}. "
                "Check the network (and ANTHROPIC_BASE_URL if you set it)."
            ) from exc
        except anthropic.AnthropicError as exc:
            raise ProviderError(f"Anthropic request failed: {exc}") from exc
        except TypeError as exc:
            if self._owns_client and not (
                os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
            ):
                raise ProviderError(
                    "No Anthropic credentials: set the ANTHROPIC_API_KEY environment variable "
                    "(or use the offline model)."
                ) from exc
            raise
        except ValueError as exc:
            # the SDK could not parse a tool's streamed JSON input
            raise ProviderError(f"Anthropic sent a reply that could not be read: {exc}") from exc

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
            else:
                # thinking and server-tool blocks go back to the API unchanged
                content.append(block.to_dict())
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
        await self.client.close()


#: Thinking blocks cannot carry ``cache_control``; a breakpoint goes on the block before them.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def _with_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with two cache breakpoints (the untouched messages are shared).

    One on the last block writes the whole conversation to the cache for the next request. The
    other sits on the last block of the latest user message before the last message: where the
    previous request ended (its own tail breakpoint). The API only looks 20 blocks back from a
    breakpoint for an earlier entry, and a turn with 20 parallel tool calls adds 40 blocks, so
    without this second mark the next request would miss the cache entirely. Together with the
    system and tools breakpoints that is the API's maximum of four.
    """
    marked = list(messages)
    _mark_last_block(marked, len(marked) - 1)
    previous_user = next(
        (i for i in range(len(marked) - 2, -1, -1) if marked[i].get("role") == "user"), None
    )
    if previous_user is not None:
        _mark_last_block(marked, previous_user)
    return marked


def _mark_last_block(messages: list[dict[str, Any]], index: int) -> None:
    """Replace ``messages[index]`` by a copy whose last markable block has ``cache_control``."""
    message = messages[index]
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = list(content)
    else:
        return
    for position in range(len(blocks) - 1, -1, -1):
        if blocks[position].get("type") not in _UNMARKABLE:
            blocks[position] = {**blocks[position], "cache_control": dict(_CACHE_CONTROL)}
            messages[index] = {**message, "content": blocks}
            return


def _describe_status_error(exc: anthropic.APIStatusError) -> str:
    kind = exc.type or "error"
    detail = str(exc.api_message or exc.message).strip().rstrip(".")
    message = f"Anthropic API error {exc.status_code} ({kind}): {detail}."
    hints = {
        401: " Check ANTHROPIC_API_KEY.",
        403: " The API key is not allowed to do this.",
        404: " Check the model name (agent.provider.model or JUPYTER_AGENT_MODEL).",
        413: " The conversation is too large; clear it with %agent reset.",
        429: " Rate limited even after the SDK's retries; wait a moment and try again.",
        529: " Anthropic is overloaded even after the SDK's retries; try again shortly.",
    }
    message += hints.get(exc.status_code, "")
    if exc.request_id:
        message += f" (request id {exc.request_id})"
    return message
