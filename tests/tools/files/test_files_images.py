"""read_file returns PNG, JPEG, GIF and WebP files as images (SPEC: the notebook as canvas).

Told by their first bytes, not their names; through the registry, as the agent calls the tool.
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image as PillowImage

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files.files import ReadFileTool
from jupyter_agent.tools.registry import ToolRegistry

FORMATS = [
    ("PNG", "image/png"),
    ("JPEG", "image/jpeg"),
    ("GIF", "image/gif"),
    ("WEBP", "image/webp"),
]


def encoded(fmt: str, size: tuple[int, int] = (40, 30)) -> bytes:
    buffer = io.BytesIO()
    PillowImage.new("RGB", size, (200, 30, 60)).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(ReadFileTool(ToolContext(tmp_path)))
    return registry


@pytest.mark.parametrize(("fmt", "media_type"), FORMATS)
async def test_an_image_file_comes_back_as_an_image_by_its_bytes(
    tmp_path: Path, registry: ToolRegistry, fmt: str, media_type: str
) -> None:
    data = encoded(fmt)
    (tmp_path / "picture.dat").write_bytes(data)  # the name says nothing
    result = await registry.call("read_file", {"file_path": "picture.dat"})
    assert not result.is_error, result.content
    assert len(result.images) == 1
    image = result.images[0]
    assert image.media_type == media_type
    assert image.data == data
    assert result.content == f"picture.dat: {fmt} image, 40×30 pixels, {len(data):,} bytes"


async def test_a_text_file_named_like_an_image_is_text(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    (tmp_path / "notes.png").write_text("just text\n")
    result = await registry.call("read_file", {"file_path": "notes.png"})
    assert (result.is_error, result.content, result.images) == (False, "just text\n", ())


async def test_offset_and_limit_do_not_apply_to_images(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    (tmp_path / "a.png").write_bytes(encoded("PNG"))
    result = await registry.call("read_file", {"file_path": "a.png", "offset": 5, "limit": 2})
    assert not result.is_error and len(result.images) == 1
    assert "offset and limit apply to text files only" in result.content


async def test_an_image_over_the_cap_is_an_error_and_is_not_read(
    tmp_path: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_agent.tools.files import reading

    data = encoded("PNG", (300, 300))
    monkeypatch.setattr(reading, "MAX_IMAGE_BYTES", len(data) - 1)
    (tmp_path / "big.png").write_bytes(data)
    result = await registry.call("read_file", {"file_path": "big.png"})
    assert result.is_error and not result.images
    assert "big.png is a PNG image larger than read_file returns" in result.content


async def test_the_default_cap_is_20_mb(tmp_path: Path, registry: ToolRegistry) -> None:
    header = encoded("PNG")
    with open(tmp_path / "huge.png", "wb") as handle:
        handle.write(header)
        handle.truncate(20 * 1024 * 1024 + 1)
    result = await registry.call("read_file", {"file_path": "huge.png"})
    assert result.is_error and "20 MB" in result.content


@pytest.mark.parametrize(
    "start", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"GIF89a\x00", b"\xff\xd8\xff"]
)
async def test_bytes_that_only_start_like_an_image_are_refused_as_binary(
    tmp_path: Path, registry: ToolRegistry, start: bytes
) -> None:
    (tmp_path / "broken.bin").write_bytes(start + b"\x00" * 20)
    result = await registry.call("read_file", {"file_path": "broken.bin"})
    assert result.is_error and not result.images
    assert "binary" in result.content


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


async def test_a_decompression_bomb_is_refused(tmp_path: Path, registry: ToolRegistry) -> None:
    """A small file claiming 30000×30000 pixels: refused before anything decodes it."""
    fields = struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0)
    (tmp_path / "bomb.png").write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", fields) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
    )
    result = await registry.call("read_file", {"file_path": "bomb.png"})
    assert result.is_error and not result.images
    assert "too many pixels" in result.content
