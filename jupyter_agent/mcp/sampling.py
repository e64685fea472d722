"""Sampling: a server's request for a completion, answered by the session's model after a yes.

An MCP server may ask the client's model to write something (``sampling/createMessage``). That
spends the user's tokens on a prompt the *server* wrote, so it goes through the same approval as
a risky tool call: the user sees the server's system prompt and messages in full and says yes or
no. Then the session's provider answers with tools off; the completion's text goes back to the
server. With nobody to ask, the request is refused.
"""

from __future__ import annotations

from collections.abc import Callable

from ..approvals import ApprovalHandler, ApprovalRequest
from ..providers.base import ModelRequest, ModelResponse, Provider, closing_stream
from .client_features import Sampler, SamplingRequest


def make_sampler(
    provider: Callable[[], Provider], approvals: Callable[[], ApprovalHandler | None]
) -> Sampler:
    """A ``Sampler`` that asks through ``approvals()`` and completes with ``provider()``."""

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
        response: ModelResponse | None = None
        async with closing_stream(provider().stream(model_request)) as stream:
            async for item in stream:
                if isinstance(item, ModelResponse):
                    response = item
        if response is None:
            raise RuntimeError("the model returned no completion")
        return "".join(str(b.get("text", "")) for b in response.content if b.get("type") == "text")

    return sample
