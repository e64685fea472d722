"""The tool ``read_file``: a text file, or a window of its lines, or an image as an image.

A text file comes back as it is when small, else as a window of lines (``line_reader`` streams
it: files of any size, lines of any length). A PNG, JPEG, GIF or WebP file — told by its first
bytes, not its name — comes back as a ``jupyter_agent.Image`` beside a line describing it, up to
``MAX_IMAGE_BYTES`` (the agent downscales it before sending). Other binary files are refused.
The file is opened beneath the held workspace root (``beneath``), regular files only: a FIFO or
device, even one swapped in mid-call, is refused instead of blocking. A page is never longer than
the agent passes on uncut (``result_budget.py``), so its closing note says truly where to go on.
"""

from __future__ import annotations

import asyncio
import codecs
import io
import os
import warnings
from pathlib import Path
from typing import Any, ClassVar

from ...errors import ToolInputError
from ..arguments import optional_int_arg, optional_str_arg, str_arg
from ..base import BuiltinTool, Image, ToolFailure, ToolOutput
from ..guard.beneath import WorkspaceRoot
from ..result_budget import page_chars
from .file_common import (
    _PATH_NOTE,
    BINARY_SNIFF_BYTES,
    _failure,
    _open_for_reading,
    _refuse_trailing_slash,
)
from .line_reader import (
    MAX_READ_CHARS,
    MAX_READ_LINES,
    count_lines,
    past_the_end,
    read_lines,
    skip_lines,
)

__all__ = ["MAX_IMAGE_BYTES", "ReadFileTool"]

#: read_file returns image files up to this size (larger ones are an error).
MAX_IMAGE_BYTES = 20 * 1024 * 1024

#: (first bytes, media type, name) of the image formats read_file returns as images.
_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png", "PNG"),
    (b"\xff\xd8\xff", "image/jpeg", "JPEG"),
    (b"GIF87a", "image/gif", "GIF"),
    (b"GIF89a", "image/gif", "GIF"),
)


def _check_encoding(encoding: str) -> codecs.CodecInfo:
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise ToolInputError(f"unknown encoding {encoding!r}; try 'utf-8' or 'latin-1'") from None
    if not getattr(codec, "_is_text_encoding", True):  # rot13, base64, zlib, ...
        raise ToolInputError(f"{encoding!r} is not a text encoding; try 'utf-8' or 'latin-1'")
    return codec


class ReadFileTool(BuiltinTool):
    name = "read_file"
    description = (
        "Read a text file in the workspace. A small file comes back exactly as it is. A large "
        f"file comes back capped at {MAX_READ_LINES} lines or about {MAX_READ_CHARS // 1024} KB, "
        "with a note saying which offset to read from next. Use offset (1-based line number) and "
        "limit (number of lines) to read part of a file. PNG, JPEG, GIF and WebP images (up to "
        f"{MAX_IMAGE_BYTES // (1024 * 1024)} MB) come back as images you can see; other binary "
        "files are refused."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "description": f"Path of the file to read, {_PATH_NOTE}.",
            },
            "encoding": {
                "type": "string",
                "description": "Text encoding of the file (default utf-8).",
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "1-based line number to start reading from (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Number of lines to read (default and maximum {MAX_READ_LINES}).",
            },
        },
        "required": ["file_path"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> ToolOutput:
        file_path = str_arg(args, "file_path")
        encoding = optional_str_arg(args, "encoding") or "utf-8"
        offset = optional_int_arg(args, "offset", minimum=1)
        limit = optional_int_arg(args, "limit", minimum=1)
        codec = _check_encoding(encoding)
        path = self.context.resolve(file_path)
        _refuse_trailing_slash(path, file_path)
        held = self.context.confinement.held
        return await asyncio.to_thread(_read_file, held, path, file_path, codec, offset, limit)


def _read_file(
    held: WorkspaceRoot,
    path: Path,
    shown: str,
    codec: codecs.CodecInfo,
    offset: int | None,
    limit: int | None,
) -> ToolOutput:
    fd = _open_for_reading(held, path, shown)
    # UTF-16/32 text is full of NUL bytes, so only sniff for encodings that never produce them.
    sniff = not codec.name.startswith(("utf-16", "utf-32"))
    try:
        with open(fd, "rb") as raw:
            info = os.fstat(raw.fileno())
            head = raw.read(BINARY_SNIFF_BYTES)
            image = _image_signature(head)
            if image is not None:
                return _read_image(raw, head, shown, *image, windowed=bool(offset or limit))
            if sniff and b"\0" in head:
                raise ToolFailure(
                    f"{shown} looks like a binary file ({info.st_size} bytes), not text; "
                    "read_file only reads text"
                )
            # a page never exceeds what the agent passes on uncut (result_budget.py): the note
            # that ends it must point right after what the model saw
            max_chars = page_chars(MAX_READ_CHARS)
            if offset is None and limit is None and info.st_size <= max_chars:
                data = head + raw.read()
                text = data.decode(codec.name)
                if count_lines(text) <= MAX_READ_LINES and len(text) <= max_chars:
                    return text
            start = offset or 1
            raw.seek(0)
            skipped = 1
            if sniff and start > 1:
                # ASCII-compatible encodings: find the line in bytes, without decoding the rest.
                total = skip_lines(raw, start - 1)
                if total is not None:
                    raise past_the_end(shown, start, total)
                skipped = start
            stream = io.TextIOWrapper(raw, encoding=codec.name, newline="")
            return read_lines(stream, shown, start, limit, skipped, max_chars)
    except UnicodeDecodeError:
        raise ToolFailure(
            f"{shown} is not valid {codec.name} text (it may be binary, or try another encoding)"
        ) from None
    except OSError as exc:
        raise _failure("read", shown, exc) from None


def _image_signature(head: bytes) -> tuple[str, str] | None:
    """(media type, format name) if ``head`` starts like an image read_file returns, else None."""
    for signature, media_type, name in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return media_type, name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp", "WEBP"
    return None


def _read_image(
    raw: io.BufferedReader, head: bytes, shown: str, media_type: str, name: str, *, windowed: bool
) -> ToolOutput:
    """The whole image file (``head`` is read already), checked to be one, and a line about it."""
    data = head + raw.read(MAX_IMAGE_BYTES + 1 - len(head))
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolFailure(
            f"{shown} is a {name} image larger than read_file returns "
            f"({MAX_IMAGE_BYTES // (1024 * 1024)} MB); nothing was read"
        )
    size = _image_size(data, name, shown)
    if size is None:
        raise ToolFailure(
            f"{shown} looks like a binary file ({len(data)} bytes): it starts like a {name} "
            "image but cannot be read as one"
        )
    width, height = size
    note = " (offset and limit apply to text files only)" if windowed else ""
    text = f"{shown}: {name} image, {width}×{height} pixels, {len(data):,} bytes{note}"
    return [text, Image(data, media_type)]


def _image_size(data: bytes, name: str, shown: str) -> tuple[int, int] | None:
    """The image's size from its header (Pillow reads no pixels for it); None if it is no image."""
    from PIL import Image as PillowImage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PillowImage.DecompressionBombWarning)
        try:
            with PillowImage.open(io.BytesIO(data), formats=[name]) as image:
                width, height = image.size
        except PillowImage.DecompressionBombError:
            raise ToolFailure(
                f"{shown} is a {name} image with too many pixels to open safely"
            ) from None
        except Exception:  # Pillow raises many kinds on a broken header
            return None
    return int(width), int(height)
