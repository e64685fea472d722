"""Tool results as the model sees them: capped, with their images, as ``tool_result`` blocks.

Any tool — a user's ``@tool`` included — can return megabytes. ``fit_result`` cuts the text to
its head and tail with a marked cut saying how much was dropped, so one result cannot fill the
context window; images count toward the same budget at their estimated token cost (four
characters a token). The cell and the model get the same ``ToolResult``, so both see the same cut.
A result whose images sit among its text (``ToolResult.parts``) keeps that order through the
fitting and in its ``tool_result`` block: each image under the text it belongs to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..tools.base import Image, ToolResult, result_parts
from ..tools.cut_mark import cut_mark
from . import images as image_tools
from .conversation import Block

#: The stand-in tokenizer the budget uses: about four characters a token.
CHARS_PER_TOKEN = 4


def cut_middle(text: str, limit: int) -> str:
    """``text`` itself if it fits in ``limit`` characters, else its head and tail around a mark."""
    if len(text) <= limit:
        return text
    head, tail, mark = _cut(len(text), limit)
    return text[:head] + mark + (text[len(text) - tail :] if tail else "")


def _cut(length: int, limit: int) -> tuple[int, int, str]:
    """How ``cut_middle`` cuts a text of ``length`` characters: head and tail kept, the mark."""
    dropped = length - limit
    mark = f"\n\n{cut_mark(dropped)}\n\n"
    keep = max(0, limit - len(mark))
    head = keep * 2 // 3
    tail = keep - head
    dropped = length - head - tail
    mark = f"\n\n{cut_mark(dropped)}\n\n"
    return head, tail, mark


def cut_parts(parts: Sequence[str | Image], limit: int) -> list[str | Image]:
    """``parts`` whose text, joined by newlines, is cut as ``cut_middle`` cuts it, each image
    kept where it stood (one whose text was cut away sits after the mark)."""
    texts = [part for part in parts if isinstance(part, str)]
    length = sum(map(len, texts)) + max(len(texts) - 1, 0)
    if length <= limit:
        return list(parts)
    head, tail, mark = _cut(length, limit)
    tail_from = length - tail
    kept: list[str | Image] = []
    start = 0
    marked = False
    for part in parts:
        if isinstance(part, Image):
            kept.append(part)
            continue
        end = start + len(part)
        piece = part[: max(0, min(end, head) - start)]
        if not marked and end > head:
            piece += mark
            marked = True
        if end > tail_from:
            piece += part[max(start, tail_from) - start :]
        if piece or start < head:
            kept.append(piece)
        start = end + 1
    return kept


def fit_result(result: ToolResult, max_chars: int | None) -> ToolResult:
    """``result`` with its images prepared and, within ``max_chars``, its text cut.

    Images take at most half the budget (the last ones are dropped with a note until they fit);
    the text gets the rest.
    """
    if result.parts:
        return _fit_ordered(result, max_chars)
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


def _fit_ordered(result: ToolResult, max_chars: int | None) -> ToolResult:
    """``fit_result`` for a result whose images sit among its text (``ToolResult.parts``): each
    image prepared where it stands (a note in its place if it cannot be sent), at most
    ``MAX_IMAGES_PER_RESULT`` of them, images within half the budget, the text cut in the
    middle — the order kept throughout."""
    parts: list[str | Image | None] = []
    costs: dict[int, int] = {}  # index in parts -> the image's cost in characters
    notes: list[str] = []
    shown = 0
    for part in result.parts:
        if isinstance(part, str):
            parts.append(part)
            continue
        if shown >= image_tools.MAX_IMAGES_PER_RESULT:
            parts.append(None)
            continue
        shown += 1
        prepared = image_tools.prepare((part,), max_images=1)
        parts.extend(prepared.images)
        if prepared.images:
            costs[len(parts) - 1] = prepared.tokens[0] * CHARS_PER_TOKEN
        if prepared.notes:
            parts.append("\n".join(prepared.notes))
    dropped = parts.count(None)
    if dropped:
        notes.append(
            f"[{dropped} more image{'s' if dropped != 1 else ''} not shown: at most "
            f"{image_tools.MAX_IMAGES_PER_RESULT} images per tool result]"
        )
    budget = max_chars
    if max_chars is not None:
        for index in sorted(costs, reverse=True):
            if sum(costs.values()) <= max_chars // 2:
                break
            del costs[index]
            parts[index] = "[an image was dropped: the images exceed this result's size budget]"
        budget = max_chars - sum(costs.values())
    fitted: list[str | Image] = [part for part in parts if part is not None]
    fitted.extend(notes)
    if budget is not None:
        fitted = cut_parts(fitted, max(budget, 0))
    content = "\n".join(part for part in fitted if isinstance(part, str))
    images = tuple(part for part in fitted if isinstance(part, Image))
    return replace(result, content=content, images=images, parts=tuple(fitted))


def result_block(call_id: str, result: ToolResult) -> Block:
    """The ``tool_result`` block for ``result``: text, or text and image blocks."""
    block: Block = {"type": "tool_result", "tool_use_id": call_id}
    if result.images:
        parts: list[Block] = []
        texts: list[str] = []  # consecutive text parts, sent as one text block
        for part in result_parts(result):
            if isinstance(part, str):
                texts.append(part)
                continue
            _add_text(parts, texts)
            texts = []
            parts.append(image_tools.image_block(part))
        _add_text(parts, texts)
        block["content"] = parts
    else:
        block["content"] = result.content
    if result.is_error:
        block["is_error"] = True
    return block


def _add_text(blocks: list[Block], texts: list[str]) -> None:
    """A text block of ``texts`` joined, unless they are blank."""
    text = "\n".join(texts)
    if text.strip():
        blocks.append({"type": "text", "text": text})
