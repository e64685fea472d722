"""Images of tool results, made fit to send: downscaled, counted, decoded within bounds.

(``agent/images.py`` adds the Messages API block; this part lives with the tools so that a tool
such as ``read_notebook`` can fit its images itself, in its own call.)

The API resizes any image whose long edge exceeds 1568 px anyway, and charges about
``width * height / 750`` tokens for it; sending the full-size bytes only costs upload time and
request size. So the agent downscales first (Pillow), keeps at most ``MAX_IMAGES_PER_RESULT`` per
result, and re-encodes when it had to touch the pixels — PNG for images with transparency or few
colours, JPEG otherwise — so the media type always names what the bytes are. Bytes Pillow cannot
read are dropped with a note rather than sent to an API that would refuse the whole request.

Decoding is the expensive, hostile part, so it is bounded three ways. **A pixel cap**: the size
is read from the header and an image of more than ``MAX_IMAGE_PIXELS`` pixels is never decoded
(a 270 KB PNG can claim 9400×9400 pixels and take seconds to inflate). **Off the loop, under the
deadline**: tools that return images (``read_notebook``, MCP tools) call ``prepare_off_loop``,
which runs ``prepare`` in a worker thread (Pillow releases the GIL while it decodes and resizes)
and gives up with a note at the call's deadline; what it fitted is remembered, so the agent's own
``prepare`` of the same images later costs a lookup. **Leniently**: a PNG whose *ancillary* chunk
(a colour profile, text, EXIF) has a bad checksum — the MCP reference server's own logo — is read
without that chunk, as browsers do; a damaged critical chunk still makes the image unreadable.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import io
import math
import struct
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import Image

#: The API's limit before it resizes an image itself.
MAX_LONG_EDGE = 1568
#: Images kept per tool result; the rest are dropped with a note.
MAX_IMAGES_PER_RESULT = 5
#: The documented estimate: tokens ≈ width × height / 750.
PIXELS_PER_TOKEN = 750
#: Images with more pixels than this (about 6300 × 6300) are not decoded at all.
MAX_IMAGE_PIXELS = 40_000_000
#: Fitted images remembered, so that preparing them again is a lookup.
_REMEMBERED = 32

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_fitted: collections.OrderedDict[tuple[int, int, str], tuple[Image, int]] = (
    collections.OrderedDict()
)
# Decoding threads of their own: one abandoned at a deadline must not hold up the loop's default
# executor (DNS lookups run there).
_workers = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="image-fit")
_fitted_lock = threading.Lock()

_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


@dataclass(frozen=True, slots=True)
class PreparedImages:
    """The images to send, their estimated token cost, and what was dropped (as notes)."""

    images: tuple[Image, ...]
    #: The estimated token cost of each image, in order.
    tokens: tuple[int, ...]
    notes: tuple[str, ...]


def estimate_tokens(width: int, height: int) -> int:
    """The API's documented token estimate for an image of this size."""
    return max(1, (width * height + PIXELS_PER_TOKEN - 1) // PIXELS_PER_TOKEN)


def prepare(images: Sequence[Image], *, max_images: int = MAX_IMAGES_PER_RESULT) -> PreparedImages:
    """Downscale, verify and count ``images`` (at most ``max_images`` of them)."""
    kept: list[Image] = []
    notes: list[str] = []
    tokens: list[int] = []
    unreadable = 0
    for image in images[:max_images]:
        fitted = _fit_remembered(image)
        if isinstance(fitted, str):
            notes.append(fitted)
            continue
        if fitted is None:
            unreadable += 1
            continue
        kept.append(fitted[0])
        tokens.append(fitted[1])
    dropped = len(images) - max_images
    if dropped > 0:
        notes.append(
            f"[{dropped} more image{'s' if dropped != 1 else ''} not shown: at most "
            f"{max_images} images per tool result]"
        )
    if unreadable:
        notes.append(f"[{unreadable} image{'s' if unreadable != 1 else ''} could not be read]")
    return PreparedImages(tuple(kept), tuple(tokens), tuple(notes))


async def prepare_off_loop(
    images: Sequence[Image], timeout: float | None, *, max_images: int = MAX_IMAGES_PER_RESULT
) -> PreparedImages:
    """``prepare`` in a worker thread, given up at ``timeout`` seconds (a note says so)."""
    if not images:
        return PreparedImages((), (), ())
    work = asyncio.get_running_loop().run_in_executor(
        _workers, functools.partial(prepare, images, max_images=max_images)
    )
    limit = timeout if timeout is not None and math.isfinite(timeout) else None
    try:
        return await asyncio.wait_for(work, limit)
    except TimeoutError:
        count = min(len(images), max_images)
        return PreparedImages(
            (),
            (),
            (
                f"[{count} image{'s' if count != 1 else ''} not shown: decoding took longer than "
                f"{limit:g} s]",
            ),
        )


def _fit_remembered(image: Image) -> tuple[Image, int] | str | None:
    key = (len(image.data), hash(image.data), image.media_type)
    with _fitted_lock:
        found = _fitted.get(key)
    if found is not None:
        return found
    fitted = _fit(image)
    if isinstance(fitted, tuple):
        with _fitted_lock:
            _fitted[key] = fitted
            # the fitted image is what a second ``prepare`` will see
            _fitted[(len(fitted[0].data), hash(fitted[0].data), fitted[0].media_type)] = fitted
            while len(_fitted) > _REMEMBERED:
                _fitted.popitem(last=False)
    return fitted


def open_checked(data: bytes) -> tuple[Any, bytes]:
    """The Pillow image in ``data`` and the bytes it was read from, size checked before decoding.

    Raises ``ValueError`` naming the size past ``MAX_IMAGE_PIXELS``, or what Pillow raises for
    bytes it cannot read. A PNG whose ancillary chunks have bad checksums is read without them.
    """
    from PIL import Image as PillowImage

    try:
        picture = PillowImage.open(io.BytesIO(data))
    except (SyntaxError, OSError):
        repaired = repair_png(data)
        if repaired is None:
            raise
        picture = PillowImage.open(io.BytesIO(repaired))
        data = repaired
    width, height = picture.size
    if width * height > MAX_IMAGE_PIXELS:
        picture.close()
        raise ValueError(
            f"an image of {width}×{height} pixels was not read: more than "
            f"{MAX_IMAGE_PIXELS:,} pixels"
        )
    return picture, data


def repair_png(data: bytes) -> bytes | None:
    """``data`` without the ancillary chunks whose CRC is wrong; None if nothing to repair.

    Ancillary chunks (lower-case first letter: ``iCCP``, ``tEXt``, ``eXIf``…) only add to the
    picture; a reader may skip them (PNG spec, 14.2). Critical ones are kept as they are.
    """
    if not data.startswith(_PNG_SIGNATURE):
        return None
    kept = [_PNG_SIGNATURE]
    position = len(_PNG_SIGNATURE)
    dropped = False
    while position + 12 <= len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        end = position + 12 + length
        if end > len(data):
            return None
        kind = data[position + 4 : position + 8]
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        good = zlib.crc32(data[position + 4 : end - 4]) & 0xFFFFFFFF == crc
        if good or not kind[:1].islower():
            kept.append(data[position:end])
        else:
            dropped = True
        position = end
        if kind == b"IEND":
            break
    return b"".join(kept) if dropped else None


def _fit(image: Image) -> tuple[Image, int] | str | None:
    """The image with its long edge ≤ ``MAX_LONG_EDGE`` and a true media type, and its tokens.

    A note (str) for an image past the pixel cap; None for one that cannot be read.
    """
    from PIL import Image as PillowImage
    from PIL import UnidentifiedImageError

    try:
        picture, readable = open_checked(image.data)
    except ValueError as exc:
        return f"[{exc}]"
    except (UnidentifiedImageError, OSError, SyntaxError, PillowImage.DecompressionBombError):
        return None
    try:
        with picture:
            picture.load()
            actual = _FORMATS.get(picture.format or "")
            width, height = picture.size
            long_edge = max(width, height)
            if long_edge <= MAX_LONG_EDGE and actual is not None:
                data = readable  # the bytes as given, or without their damaged optional chunks
                media_type = actual
            else:
                scale = min(1.0, MAX_LONG_EDGE / long_edge)
                size = (max(1, round(width * scale)), max(1, round(height * scale)))
                resized = picture.resize(size, PillowImage.Resampling.LANCZOS)
                data, media_type = _encode(resized)
                width, height = size
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None
    except PillowImage.DecompressionBombError:
        return None
    return Image(data, media_type), estimate_tokens(width, height)


def _encode(picture: Any) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    if picture.mode in ("RGBA", "LA", "P", "1", "L"):
        picture.save(buffer, format="PNG", optimize=True)
        return buffer.getvalue(), "image/png"
    picture.convert("RGB").save(buffer, format="JPEG", quality=85)
    return buffer.getvalue(), "image/jpeg"
