"""An MCP ``CallToolResult`` as a tool's output: text, ``Image`` parts, JSON, or a failure.

Text blocks stay text; image blocks become ``jupyter_agent.Image`` parts (the agent sends them to
the model as images); structured content is added as JSON when no text block already carries it;
``isError`` raises ``ToolFailure`` so the registry reports an error result. A resource link is
shown as a link unless the server's entry allows reading it back (``read_resources``): a server
could otherwise point the agent at any resource it can name.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..tools.base import IMAGE_MEDIA_TYPES, Image, ToolFailure

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ReadResourceResult

#: Characters of one resource read back into a result.
MAX_RESOURCE_CHARS = 50_000

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
    if structured is not None and not _carried(structured, parts):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    if result.is_error:
        text = "\n".join(part for part in parts if isinstance(part, str)).strip()
        raise ToolFailure(f"the MCP server {server!r} reported an error: {text or '(no message)'}")
    return parts


def _carried(structured: Any, parts: list[str | Image]) -> bool:
    """Whether a text part already is ``structured`` (servers usually send both)."""
    for part in parts:
        if not isinstance(part, str):
            continue
        if (
            isinstance(structured, dict)
            and list(structured) == ["result"]
            and part in (structured["result"], str(structured["result"]))
        ):
            return True
        try:
            if json.loads(part) == structured:
                return True
        except ValueError:
            continue
    return False


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
            text = text[:MAX_RESOURCE_CHARS] + f"\n[… cut at {MAX_RESOURCE_CHARS} characters]"
        return [f"[resource {contents.uri}]\n{text}"]
    if isinstance(contents, types.BlobResourceContents):
        media_type = contents.mime_type or "application/octet-stream"
        if media_type in IMAGE_MEDIA_TYPES:
            return [f"[resource {contents.uri}]", _image(contents.blob, media_type)]
        return [f"[resource {contents.uri}: {media_type} data not shown]"]
    return [f"[resource {getattr(contents, 'uri', '?')} not shown]"]
