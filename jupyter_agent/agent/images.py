"""Images of tool results as Messages API blocks; fitting them is ``tools/image_fit.py``.

The fitting (downscaling, counting, the pixel cap, lenient decoding, off-loop preparation) lives
with the tools, which may fit their own images within their call; the names stay importable
from here.
"""

from __future__ import annotations

import base64
from typing import Any

from ..tools.base import Image
from ..tools.image_fit import (
    MAX_IMAGE_PIXELS,
    MAX_IMAGES_PER_RESULT,
    MAX_LONG_EDGE,
    PIXELS_PER_TOKEN,
    PreparedImages,
    estimate_tokens,
    open_checked,
    prepare,
    prepare_off_loop,
    repair_png,
)

__all__ = [
    "MAX_IMAGES_PER_RESULT",
    "MAX_IMAGE_PIXELS",
    "MAX_LONG_EDGE",
    "PIXELS_PER_TOKEN",
    "PreparedImages",
    "estimate_tokens",
    "image_block",
    "open_checked",
    "prepare",
    "prepare_off_loop",
    "repair_png",
]


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
