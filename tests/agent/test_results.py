"""Tool results as the model sees them: the middle cut, images fitted and counted in the cap."""

from __future__ import annotations

import io

from PIL import Image as PillowImage

from jupyter_agent import Image
from jupyter_agent.agent.images import MAX_LONG_EDGE, estimate_tokens, prepare
from jupyter_agent.agent.results import CHARS_PER_TOKEN, cut_middle, fit_result, result_block
from jupyter_agent.tools.base import ToolResult


def encoded(width: int, height: int, fmt: str, mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    PillowImage.new(mode, (width, height)).save(buffer, format=fmt)
    return buffer.getvalue()


def test_cut_middle_keeps_head_and_tail_and_says_how_much_went() -> None:
    text = "a" * 5_000 + "b" * 5_000
    cut = cut_middle(text, 2_000)
    assert len(cut) <= 2_000
    assert cut.startswith("a") and cut.endswith("b")
    kept = len(cut) - len(cut[cut.index("\n\n[") : cut.index("]\n\n") + 3])
    assert f"{len(text) - kept:,} characters cut" in cut
    assert cut_middle("short", 2_000) == "short"


def test_a_large_photo_is_downscaled_and_reencoded_with_a_matching_type() -> None:
    (image,) = prepare([Image(encoded(5000, 2500, "BMP"), "image/png")]).images
    with PillowImage.open(io.BytesIO(image.data)) as picture:
        assert picture.size == (MAX_LONG_EDGE, MAX_LONG_EDGE // 2)
        assert {"JPEG": "image/jpeg", "PNG": "image/png"}[picture.format or ""] == image.media_type


def test_unreadable_bytes_are_dropped_with_a_note() -> None:
    prepared = prepare([Image(b"\x89PNG\r\n\x1a\nnot really", "image/png")])
    assert prepared.images == ()
    assert prepared.notes == ("[1 image could not be read]",)


def test_images_count_toward_the_result_budget() -> None:
    png = encoded(1500, 1500, "PNG")
    cost = estimate_tokens(1500, 1500) * CHARS_PER_TOKEN
    result = ToolResult("x" * 50_000, images=(Image(png, "image/png"),) * 3)
    fitted = fit_result(result, 4 * cost)  # images may take half: two fit, the third is dropped
    assert len(fitted.images) == 2
    assert "an image was dropped" in fitted.content
    assert len(fitted.content) <= 4 * cost - 2 * cost
    block = result_block("toolu_1", fitted)
    assert [part["type"] for part in block["content"]] == ["text", "image", "image"]
