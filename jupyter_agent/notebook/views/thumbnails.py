"""Small inline thumbnails of a tool result's images, for the live view and the saved record.

A saved notebook carries every byte of its outputs, so the record keeps a thumbnail (long edge
at most ``THUMBNAIL_EDGE`` pixels, re-encoded with Pillow) rather than the image as the tool
returned it. An image Pillow cannot read, or one past the pixel cap of ``tools/image_fit.py``
(never decoded), is named, not shown.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from ...tools.image_fit import open_checked
from ..inert import html_text

#: Long edge of a thumbnail, in pixels.
THUMBNAIL_EDGE = 160
#: Thumbnails shown per tool call at most.
MAX_THUMBNAILS = 5


def thumbnail_png(data: bytes, edge: int = THUMBNAIL_EDGE) -> bytes | None:
    """``data`` shrunk to a PNG whose long edge is at most ``edge``; ``None`` if unreadable."""
    from PIL import Image as PILImage

    try:
        picture, _ = open_checked(data)  # lenient, and nothing past the pixel cap is decoded
        with picture as opened:
            opened.thumbnail((edge, edge))
            image: PILImage.Image = opened
            if opened.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                image = opened.convert("RGBA")
            out = io.BytesIO()
            image.save(out, format="PNG", optimize=False)
            return out.getvalue()
    except Exception:  # a broken or hostile image: name it instead
        return None


def thumbnail_tags(images: tuple[Any, ...]) -> tuple[str, ...]:
    """``<img>`` tags (data URIs) for the first ``MAX_THUMBNAILS`` of ``images``."""
    tags = []
    for image in images[:MAX_THUMBNAILS]:
        png = thumbnail_png(image.data)
        if png is None:
            tags.append(f"<i>[{html_text(image.media_type)} image, not readable]</i>")
            continue
        encoded = base64.b64encode(png).decode("ascii")
        tags.append(
            f'<img src="data:image/png;base64,{encoded}" alt="tool result image" '
            'style="margin: 2px 4px 2px 0; border: 1px solid #ccc;"/>'
        )
    if len(images) > MAX_THUMBNAILS:
        tags.append(f"<i>… {len(images) - MAX_THUMBNAILS} more images</i>")
    return tuple(tags)
