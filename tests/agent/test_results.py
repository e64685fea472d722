"""Tool results as the model sees them: the middle cut, images fitted and counted in the cap."""

from __future__ import annotations

import io

from PIL import Image as PillowImage

from jupyter_agent import Image
from jupyter_agent.agent.images import MAX_LONG_EDGE, estimate_tokens, prepare
from jupyter_agent.agent.results import (
    CHARS_PER_TOKEN,
    cut_middle,
    cut_parts,
    fit_result,
    result_block,
)
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


def test_ordered_parts_keep_each_image_in_place_through_the_fitting() -> None:
    big = Image(encoded(5000, 2500, "BMP"), "image/png")
    small = Image(encoded(40, 30, "PNG"), "image/png")
    broken = Image(b"\x89PNG\r\n\x1a\nnot really", "image/png")
    parts = ("cell 1", big, "cell 2", broken, "cell 3", *(small,) * 6, "cell 4")
    result = ToolResult("unused", images=(big, broken, *(small,) * 6), parts=parts)
    fitted = fit_result(result, None)
    kinds = ["image" if isinstance(part, Image) else part for part in fitted.parts]
    assert kinds == [
        "cell 1",
        "image",  # downscaled where it stood
        "cell 2",
        "[1 image could not be read]",  # a note in the unreadable image's place
        "cell 3",
        "image",
        "image",
        "image",  # five images in all, the unreadable one counted (as prepare counts it)
        "cell 4",
        "[3 more images not shown: at most 5 images per tool result]",
    ]
    first = fitted.parts[1]
    assert isinstance(first, Image) and first != big
    with PillowImage.open(io.BytesIO(first.data)) as picture:
        assert max(picture.size) == MAX_LONG_EDGE
    assert fitted.images == tuple(part for part in fitted.parts if isinstance(part, Image))
    assert fitted.content == "\n".join(part for part in fitted.parts if isinstance(part, str))
    block = result_block("toolu_1", fitted)
    types = [part["type"] for part in block["content"]]
    assert types == ["text", "image", "text", "image", "image", "image", "text"]
    texts = [part["text"] for part in block["content"] if part["type"] == "text"]
    assert texts[1] == "cell 2\n[1 image could not be read]\ncell 3"


def test_ordered_parts_are_cut_and_capped_with_the_images_where_they_stood() -> None:
    png = Image(encoded(1500, 1500, "PNG"), "image/png")
    cost = estimate_tokens(1500, 1500) * CHARS_PER_TOKEN
    parts = ("a" * 20_000, png, "b" * 20_000, png, "c" * 20_000, png, "d" * 50)
    result = ToolResult("unused", images=(png,) * 3, parts=parts)
    budget = 4 * cost  # images may take half: the last one is dropped, in its place a note
    fitted = fit_result(result, budget)
    assert len(fitted.images) == 2
    [dropped] = [part for part in fitted.parts if isinstance(part, str) and "dropped" in part]
    assert fitted.parts.index(dropped) > fitted.parts.index(fitted.images[1])
    assert len(fitted.content) <= budget - 2 * cost + len(fitted.parts)  # + the separators
    assert "characters cut …]" in fitted.content
    first, *_ = fitted.parts
    assert isinstance(first, str) and first.startswith("a") and isinstance(fitted.parts[1], Image)
    assert fitted.content.endswith("d" * 50)
    block = result_block("toolu_1", fitted)
    # the "b" text fell in the cut: the two images stand together after the mark
    assert [part["type"] for part in block["content"]] == ["text", "image", "image", "text"]
    # the cut text alone, without images, is cut exactly as cut_middle cuts it
    joined = "\n".join(part for part in parts if isinstance(part, str))
    assert cut_parts([joined], 1_000) == [cut_middle(joined, 1_000)]
