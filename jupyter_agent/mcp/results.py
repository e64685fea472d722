"""An MCP ``CallToolResult`` as a tool's output: text, ``Image`` parts, JSON, or a failure.

Text blocks stay text; image blocks become ``jupyter_agent.Image`` parts (the agent sends them to
the model as images, never as base64 text); structured content is added as JSON only when the
blocks do not already say it (``_carried``: servers usually send both, and the reference ones
mirror their blocks in it, so a picture's base64 would otherwise reach the model as text);
``isError`` raises ``ToolFailure`` so the registry reports an error result. A resource link is
shown as a link unless the server's entry allows reading it back (``read_resources``): a server
could otherwise point the agent at any resource it can name.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..tools.base import IMAGE_MEDIA_TYPES, Image, ToolFailure
from ..tools.cut_mark import cut_mark

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ReadResourceResult

#: Characters of one resource read back into a result.
MAX_RESOURCE_CHARS = 50_000
#: Structured content with more values than this is sent as it is, not compared with the text.
MAX_COMPARED_LEAVES = 2_000

ResourceReader = Callable[[str], Awaitable["ReadResourceResult"]]


async def to_output(
    result: CallToolResult, *, server: str, read_resource: ResourceReader | None
) -> list[str | Image]:
    """The parts of ``result`` in order; raises ``ToolFailure`` for ``isError``."""
    from mcp import types

    parts: list[str | Image] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(_image(block.data, block.mime_type))
        elif isinstance(block, types.AudioContent):
            parts.append(f"[audio ({block.mime_type}) not shown: the agent cannot play audio]")
        elif isinstance(block, types.ResourceLink):
            if read_resource is None:
                parts.append(
                    f"[resource link: {block.name} <{block.uri}> (not read: this server's entry "
                    "does not allow reading resources)]"
                )
            else:
                parts.extend(_contents(await read_resource(str(block.uri))))
        elif isinstance(block, types.EmbeddedResource):
            parts.extend(_resource_parts(block.resource))
        else:
            parts.append(f"[{getattr(block, 'type', type(block).__name__)} block not shown]")
    structured = result.structured_content
    if structured is not None and not _carried(structured, parts, result.content):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    if result.is_error:
        text = "\n".join(part for part in parts if isinstance(part, str)).strip()
        raise ToolFailure(f"the MCP server {server!r} reported an error: {text or '(no message)'}")
    return parts


def _carried(structured: Any, parts: list[str | Image], blocks: Sequence[Any]) -> bool:
    """Whether the blocks already say what ``structured`` says (then it is not sent again).

    It is said when a text part is the same JSON, or when every value in it (its leaves: strings,
    numbers, booleans) appears in the blocks: a string inside a text part or as a field of a
    block (an image's data and type), a number or boolean as a word of a text part. So
    ``{"content": text}`` beside that text, ``{"result": "5"}`` beside "5", and
    ``{"content": [the image block]}`` beside the image are all carried.
    """
    texts = [part for part in parts if isinstance(part, str)]
    # only a text of the same kind can parse to it (no exception to build for every other)
    opening = "{" if isinstance(structured, dict) else "[" if isinstance(structured, list) else ""
    for text in texts:
        if opening and not text.lstrip().startswith(opening):
            continue
        try:
            if json.loads(text) == structured:
                return True
        except (ValueError, RecursionError):
            continue
    leaves: list[object] = []
    _leaves(structured, leaves)
    if len(leaves) > MAX_COMPARED_LEAVES:
        return False
    fields: set[str] | None = None  # the blocks' own fields, dumped only when a text lacks a leaf
    for leaf in leaves:
        if isinstance(leaf, str):
            if not leaf or any(leaf in text for text in texts):
                continue
            if fields is None:
                fields = set()
                for block in blocks:
                    dump = getattr(block, "model_dump", None)
                    if callable(dump):
                        _leaves(dump(by_alias=True, exclude_none=True), fields)
            if leaf not in fields:
                return False
        else:
            word = re.compile(rf"(?<![\w.]){re.escape(json.dumps(leaf))}(?![\w.])")
            if not any(word.search(text) for text in texts):
                return False
    return True


def _leaves(value: Any, into: set[str] | list[object]) -> None:
    """The scalar values inside ``value`` (keys are names, not data), iteratively."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list | tuple):
            pending.extend(node)
        elif node is None:
            continue
        elif isinstance(into, set):
            if isinstance(node, str):
                into.add(node)
        else:
            into.append(node)


def _image(data: str, media_type: str) -> str | Image:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[an image ({media_type}) whose data is not valid base64]"
    if media_type not in IMAGE_MEDIA_TYPES:
        return f"[an image of type {media_type} ({len(raw)} bytes) the model cannot take]"
    return Image(raw, media_type)


def _contents(result: ReadResourceResult) -> list[str | Image]:
    parts: list[str | Image] = []
    for contents in result.contents:
        parts.extend(_resource_parts(contents))
    return parts


def _resource_parts(contents: Any) -> list[str | Image]:
    from mcp import types

    if isinstance(contents, types.TextResourceContents):
        text = contents.text
        if len(text) > MAX_RESOURCE_CHARS:
            text = f"{text[:MAX_RESOURCE_CHARS]}\n{cut_mark(len(text) - MAX_RESOURCE_CHARS)}"
        return [f"[resource {contents.uri}]\n{text}"]
    if isinstance(contents, types.BlobResourceContents):
        media_type = contents.mime_type or "application/octet-stream"
        if media_type in IMAGE_MEDIA_TYPES:
            return [f"[resource {contents.uri}]", _image(contents.blob, media_type)]
        return [f"[resource {contents.uri}: {media_type} data not shown]"]
    return [f"[resource {getattr(contents, 'uri', '?')} not shown]"]
