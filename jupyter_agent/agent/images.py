"""Images of tool results, made fit to send: downscaled, counted, and as Messages API blocks.

The API resizes any image whose long edge exceeds 1568 px anyway, and charges about
``width * height / 750`` tokens for it; sending the full-size bytes only costs upload time and
request size. So the agent downscales first (Pillow), keeps at most ``MAX_IMAGES_PER_RESULT`` per
result, and re-encodes when it had to touch the pixels — PNG for images with transparency or few
colours, JPEG otherwise — so the media type always names what the bytes are. Bytes Pillow cannot
read are dropped with a note rather than sent to an API that would refuse the whole request.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..tools.base import Image

#: The API's limit before it resizes an image itself.
MAX_LONG_EDGE = 1568
#: Images kept per tool result; the rest are dropped with a note.
MAX_IMAGES_PER_RESULT = 5
#: The documented estimate: tokens ≈ width × height / 750.
PIXELS_PER_TOKEN = 750

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
        fitted = _fit(image)
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


def _fit(image: Image) -> tuple[Image, int] | None:
    """The image with its long edge ≤ ``MAX_LONG_EDGE`` and a true media type, and its tokens."""
    from PIL import Image as PillowImage
    from PIL import UnidentifiedImageError

    try:
        with PillowImage.open(io.BytesIO(image.data)) as picture:
            picture.load()
            actual = _FORMATS.get(picture.format or "")
            width, height = picture.size
            long_edge = max(width, height)
            if long_edge <= MAX_LONG_EDGE and actual is not None:
                data = image.data
                media_type = actual
            else:
                scale = min(1.0, MAX_LONG_EDGE / long_edge)
                size = (max(1, round(width * scale)), max(1, round(height * scale)))
                resized = picture.resize(size, PillowImage.Resampling.LANCZOS)
                data, media_type = _encode(resized)
                width, height = size
    except (UnidentifiedImageError, OSError, ValueError, PillowImage.DecompressionBombError):
        return None
    return Image(data, media_type), estimate_tokens(width, height)


def _encode(picture: Any) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    if picture.mode in ("RGBA", "LA", "P", "1", "L"):
        picture.save(buffer, format="PNG", optimize=True)
        return buffer.getvalue(), "image/png"
    picture.convert("RGB").save(buffer, format="JPEG", quality=85)
    return buffer.getvalue(), "image/jpeg"


def image_block(image: Image) -> dict[str, Any]:
    """The Messages API block for ``image`` (base64 source)."""
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": image.media_type,
            "data": base64.b64encode(image.data).decode("ascii"),
        },
    }
