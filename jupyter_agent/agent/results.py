"""Tool results as the model sees them: capped, with their images, as ``tool_result`` blocks.

Any tool — a user's ``@tool`` included — can return megabytes. ``fit_result`` cuts the text to
its head and tail with a marked cut saying how much was dropped, so one result cannot fill the
context window; images count toward the same budget at their estimated token cost (four
characters a token). The cell and the model get the same ``ToolResult``, so both see the same cut.
"""

from __future__ import annotations

from dataclasses import replace

from ..tools.base import ToolResult
from . import images as image_tools
from .conversation import Block

#: The stand-in tokenizer the budget uses: about four characters a token.
CHARS_PER_TOKEN = 4


def cut_middle(text: str, limit: int) -> str:
    """``text`` itself if it fits in ``limit`` characters, else its head and tail around a mark."""
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    mark = f"\n\n[… {dropped:,} characters cut from the middle of this result …]\n\n"
    keep = max(0, limit - len(mark))
    head = keep * 2 // 3
    tail = keep - head
    dropped = len(text) - head - tail
    mark = f"\n\n[… {dropped:,} characters cut from the middle of this result …]\n\n"
    return text[:head] + mark + (text[len(text) - tail :] if tail else "")


def fit_result(result: ToolResult, max_chars: int | None) -> ToolResult:
    """``result`` with its images prepared and, within ``max_chars``, its text cut.

    Images take at most half the budget (the last ones are dropped with a note until they fit);
    the text gets the rest.
    """
    content = result.content
    kept = result.images
    budget = max_chars
    if kept:
        prepared = image_tools.prepare(kept)
        kept = prepared.images
        costs = [tokens * CHARS_PER_TOKEN for tokens in prepared.tokens]
        notes = list(prepared.notes)
        if max_chars is not None:
            while kept and sum(costs) > max_chars // 2:
                kept = kept[:-1]
                costs.pop()
                notes.append("[an image was dropped: the images exceed this result's size budget]")
            budget = max_chars - sum(costs)
        if notes:
            content = "\n".join([content, *notes]) if content else "\n".join(notes)
    if budget is not None:
        content = cut_middle(content, max(budget, 0))
    if content is result.content and kept is result.images:
        return result
    return replace(result, content=content, images=kept)


def result_block(call_id: str, result: ToolResult) -> Block:
    """The ``tool_result`` block for ``result``: text, or text and image blocks."""
    block: Block = {"type": "tool_result", "tool_use_id": call_id}
    if result.images:
        parts: list[Block] = []
        if result.content.strip():
            parts.append({"type": "text", "text": result.content})
        parts.extend(image_tools.image_block(image) for image in result.images)
        block["content"] = parts
    else:
        block["content"] = result.content
    if result.is_error:
        block["is_error"] = True
    return block
