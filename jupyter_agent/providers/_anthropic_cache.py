"""Prompt-cache breakpoints on the conversation ``AnthropicProvider`` sends.

The provider marks the system prompt and the tool definitions itself (``CACHE_CONTROL``); the
conversation gets two more marks here, so that each turn of a tool loop — however many parallel
calls it made — re-reads the earlier ones from the cache (``with_cache_breakpoints`` says why two).
Its own module: it is the one part of building a request that rewrites the agent's messages
(copies of them: the agent's own dicts are never changed).
"""

from __future__ import annotations

from typing import Any

#: The breakpoint marker the Messages API takes on a block.
CACHE_CONTROL = {"type": "ephemeral"}

#: Thinking blocks cannot carry ``cache_control``; a breakpoint goes on the block before them.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def with_cache_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``messages`` with two cache breakpoints (the untouched messages are shared).

    One on the last block writes the whole conversation to the cache for the next request. The
    other sits on the last block of the latest user message before the last message: where the
    previous request ended (its own tail breakpoint). The API only looks 20 blocks back from a
    breakpoint for an earlier entry, and a turn with 20 parallel tool calls adds 40 blocks, so
    without this second mark the next request would miss the cache entirely. Together with the
    system and tools breakpoints that is the API's maximum of four.
    """
    marked = list(messages)
    mark_last_block(marked, len(marked) - 1)
    previous_user = next(
        (i for i in range(len(marked) - 2, -1, -1) if marked[i].get("role") == "user"), None
    )
    if previous_user is not None:
        mark_last_block(marked, previous_user)
    return marked


def mark_last_block(messages: list[dict[str, Any]], index: int) -> None:
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
            blocks[position] = {**blocks[position], "cache_control": dict(CACHE_CONTROL)}
            messages[index] = {**message, "content": blocks}
            return
