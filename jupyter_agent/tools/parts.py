"""What a tool returns, read as text and images: our ``Image`` parts and the SDK's content blocks.

A tool returns ``str`` or a list of ``str`` and ``Image`` parts (the SPEC). Tools written for the
``anthropic`` SDK's runner (``@beta_tool``) return what a ``tool_result`` holds instead: content
blocks, as dicts (``{"type": "text", "text": ...}``, ``{"type": "image", "source": {"type":
"base64", "media_type": ..., "data": ...}}``) or as the SDK's pydantic block objects. Both are
read here into the same (text, images) pair — or, kept in order, into text and image parts — so
an image reaches the model as an image block, never as the tens of thousands of characters of its
base64, whoever wrote the tool.

This module imports neither the SDK nor pydantic: a block object is read through its
``model_dump()``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from ..errors import BadPart
from .base import Image

__all__ = ["BadPart", "is_content", "ordered_parts"]

#: Block types a tool result may hold besides text and images, shown to the model by name.
_OTHER_BLOCKS = frozenset({"document", "search_result", "tool_reference"})


def _block(part: object) -> Mapping[str, Any] | None:
    """``part`` as a content block mapping (a dict, or an SDK block object), or None."""
    if isinstance(part, Mapping):
        block: object = part
    else:
        dump = getattr(part, "model_dump", None)
        if not callable(dump) or not isinstance(getattr(part, "type", None), str):
            return None
        try:
            block = dump()
        except Exception:
            return None
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return block
    if kind == "image" and isinstance(block.get("source"), Mapping):
        return block
    if kind in _OTHER_BLOCKS:
        return block
    return None


def is_content(value: object) -> bool:
    """Whether a ``@tool`` function's return value is content to send as it is (text and images)
    rather than data to show as JSON: an ``Image``, or a list of ``str``, ``Image`` and content
    blocks with at least one image or block in it (a list of plain strings stays JSON)."""
    if isinstance(value, Image):
        return True
    if not isinstance(value, list | tuple) or not value:
        return False
    rich = False
    for part in value:
        if isinstance(part, str):
            continue
        if isinstance(part, Image) or _block(part) is not None:
            rich = True
            continue
        return False
    return rich


def ordered_parts(output: object) -> tuple[str | Image, ...] | None:
    """``output`` as text and ``Image`` parts in the order the tool gave them (a block read as
    text where it stood), or None if it is not text and image parts.

    Raises ``BadPart`` for an image block whose data cannot be read.
    """
    if isinstance(output, Image):
        return (output,)
    if not isinstance(output, list | tuple):
        return None
    parts: list[str | Image] = []
    for part in output:
        if isinstance(part, str | Image):
            parts.append(part)
            continue
        block = _block(part)
        if block is None:
            return None
        kind = block["type"]
        if kind == "text":
            parts.append(block["text"])
        elif kind == "image":
            parts.append(_image_of(block["source"]))
        else:
            parts.append(_describe_block(block))
    return tuple(parts)


def _image_of(source: Mapping[str, Any]) -> Image | str:
    """The image of a block's ``source``; a note in its place for one that has no bytes here."""
    kind = source.get("type")
    if kind == "url":
        return f"[image at {source.get('url')} (not fetched)]"
    if kind == "file":
        return f"[image file {source.get('file_id')} (not fetched)]"
    if kind != "base64":
        raise BadPart(f"an image block's source type {kind!r} is not base64, url or file")
    data = source.get("data")
    if isinstance(data, str):
        data = data.encode("ascii", "replace")
    if not isinstance(data, bytes | bytearray):
        raise BadPart(f"an image block's data must be base64 text, not {type(data).__name__}")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise BadPart("an image block's data is not valid base64") from None
    try:
        return Image(raw, str(source.get("media_type")))
    except (TypeError, ValueError) as exc:
        raise BadPart(f"an image block could not be read: {exc}") from None


def _describe_block(block: Mapping[str, Any]) -> str:
    """A block other than text or image, named for the model: its title or text if it has one."""
    kind = block["type"]
    title = block.get("title")
    source = block.get("source")
    if kind == "document" and isinstance(source, Mapping) and source.get("type") == "text":
        return str(source.get("data", ""))
    if kind == "search_result":
        content = block.get("content")
        texts = [
            str(item.get("text", ""))
            for item in content or []
            if isinstance(item, Mapping) and item.get("type") == "text"
        ]
        return "\n".join([f"{title} ({block.get('source')})", *texts])
    return f"[{kind}{': ' + str(title) if title else ''}]"
