"""Sampling: a server's request for a completion, answered by the session's model after a yes.

An MCP server may ask the client's model to write something (``sampling/createMessage``). That
spends the user's tokens on a prompt the *server* wrote, so it goes through the same approval as
a risky tool call: the user sees the server's system prompt and messages in full and says yes or
no. Then the session's provider answers with tools off; the completion's text goes back to the
server. With nobody to ask, the request is refused.

What was approved is what is sent: the reply is capped at the ``max_tokens`` the prompt showed
(never the provider's own, larger cap), without extended thinking (which would need a budget
below it). And it is a model request like any other: ``spend`` puts it behind the session's
spend guard, which counts what it cost and refuses it when it could pass a cap.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from ..approvals import ApprovalHandler, ApprovalRequest
from ..providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ReplyCapped,
    ThinkingProvider,
    closing_stream,
)
from .client_features import Sampler, SamplingRequest


def capped(provider: Provider, max_tokens: int) -> Provider:
    """``provider`` answering in at most ``max_tokens`` (a copy sharing its client), no
    thinking; a provider without a cap of its own (the offline model) is itself."""
    if not isinstance(provider, ReplyCapped):
        return provider
    variant = copy.copy(provider)
    own = provider.max_tokens
    variant.max_tokens = max_tokens if own is None else min(own, max_tokens)
    if isinstance(variant, ThinkingProvider):
        variant.thinking_budget = None
    return variant


def make_sampler(
    provider: Callable[[], Provider],
    approvals: Callable[[], ApprovalHandler | None],
    spend: Callable[[Provider], Provider] = lambda provider: provider,
) -> Sampler:
    """A ``Sampler`` that asks through ``approvals()`` and completes with ``provider()``, capped
    at the approved ``max_tokens`` and sent through ``spend`` (the spend guard)."""

    async def sample(request: SamplingRequest) -> str:
        handler = approvals()
        if handler is None:
            raise PermissionError("no one can approve it in this session")
        shown: dict[str, object] = {"system prompt": request.system_prompt}
        for number, (role, text) in enumerate(request.messages, 1):
            shown[f"message {number} ({role})"] = text
        shown["max tokens"] = request.max_tokens
        decision = await handler(
            ApprovalRequest(
                call_id=f"sampling-{id(request):x}",
                name=f"{request.server} (sampling)",
                input=shown,
                reason=(
                    f"The MCP server {request.server!r} asks your model for a completion of the "
                    "messages below (it spends your tokens; the answer goes to the server)."
                ),
            )
        )
        if not decision.approved:
            raise PermissionError(decision.reason or "denied")
        model_request = ModelRequest(
            system=request.system_prompt,
            messages=[
                {"role": role, "content": [{"type": "text", "text": text or "(empty)"}]}
                for role, text in request.messages
            ],
            tools=[],
            purpose="sampling",
        )
        if request.max_tokens < 1:
            raise ValueError(f"maxTokens must be at least 1, not {request.max_tokens}")
        sender = spend(capped(provider(), request.max_tokens))
        response: ModelResponse | None = None
        async with closing_stream(sender.stream(model_request)) as stream:
            async for item in stream:
                if isinstance(item, ModelResponse):
                    response = item
        if response is None:
            raise RuntimeError("the model returned no completion")
        return "".join(str(b.get("text", "")) for b in response.content if b.get("type") == "text")

    return sample
