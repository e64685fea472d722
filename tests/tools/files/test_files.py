"""The file tools, end to end through the registry, on real files — and under attack."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hostile_layout import SECRET, Layout, bad_text_paths, hostile_paths, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_agent.tools.base import ToolResult
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files import line_reader
from jupyter_agent.tools.files.files import (
    EditFileTool,
    ListDirTool,
    MkdirTool,
    ReadFileTool,
    RemoveTool,
    WriteFileTool,
)
from jupyter_agent.tools.files.move import MoveTool
from jupyter_agent.tools.registry import ToolRegistry


class Harness:
    def __init__(self, layout: Layout, workspace: Path | None = None) -> None:
        self.layout = layout
        self.ws = layout.ws
        self.context = ToolContext(workspace or layout.ws)
        self.registry = ToolRegistry()
        for cls in (
            ReadFileTool,
            WriteFileTool,
            EditFileTool,
            ListDirTool,
            MkdirTool,
            MoveTool,
            RemoveTool,
        ):
            self.registry.register(cls(self.context))

    async def ok(self, name: str, **args: Any) -> str:
        result = await self.registry.call(name, args)
        assert not result.is_error, result.content
        return result.content

    async def err(self, name: str, **args: Any) -> str:
        result = await self.registry.call(name, args)
        assert result.is_error, result.content
        assert result.content.startswith("Error"), result.content
        return result.content

    async def call(self, name: str, **args: Any) -> ToolResult:
        return await self.registry.call(name, args)


@pytest.fixture
def h(layout: Layout) -> Harness:
    return Harness(layout)


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.endswith(".tmp")]


# -- read_file -----------------------------------------------------------------------------------


async def test_read_small_file_exactly(h: Harness) -> None:
    text = "line one\r\nline two\n\n  indented\ttab\nno newline at end ünïcødé"
    (h.ws / "exact.txt").write_bytes(text.encode())
    assert await h.ok("read_file", file_path="exact.txt") == text
    (h.ws / "empty.txt").write_bytes(b"")
    assert await h.ok("read_file", file_path="empty.txt") == ""


async def test_read_offset_and_limit(h: Harness) -> None:
    (h.ws / "n.txt").write_text("".join(f"{i}\n" for i in range(1, 11)))
    assert await h.ok("read_file", file_path="n.txt", offset=3, limit=2) == "3\n4\n"
    assert await h.ok("read_file", file_path="n.txt", offset=9) == "9\n10\n"
    assert await h.ok("read_file", file_path="n.txt", limit=1) == "1\n"
    message = await h.err("read_file", file_path="n.txt", offset=50)
    assert "past the end" in message and "10 lines" in message
    assert "has 10 lines" in await h.err("read_file", file_path="n.txt", offset=11)
    (h.ws / "partial.txt").write_text("1\n2")
    assert await h.ok("read_file", file_path="partial.txt", offset=2) == "2"
    assert "has 2 lines" in await h.err("read_file", file_path="partial.txt", offset=3)
    (h.ws / "wide16.txt").write_bytes("1\n2\n3\n".encode("utf-16"))
    assert await h.ok("read_file", file_path="wide16.txt", offset=2, encoding="utf-16") == "2\n3\n"
    assert "has 3 lines" in await h.err(
        "read_file", file_path="wide16.txt", offset=7, encoding="utf-16"
    )
    await h.err("read_file", file_path="n.txt", offset=0)
    await h.err("read_file", file_path="n.txt", limit="5")


async def test_read_large_file_is_capped_with_a_note(h: Harness) -> None:
    total = 5000
    (h.ws / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, total + 1)))
    first = await h.ok("read_file", file_path="big.txt")
    body, note = first.split("\n\n[", 1)
    assert body.splitlines() == [f"row {i}" for i in range(1, line_reader.MAX_READ_LINES + 1)]
    assert f"offset={line_reader.MAX_READ_LINES + 1}" in note
    # Follow the notes to the end: every line exactly once.
    seen = body.splitlines()
    offset = line_reader.MAX_READ_LINES + 1
    while True:
        part = await h.ok("read_file", file_path="big.txt", offset=offset)
        if "\n\n[" in part:
            chunk, note = part.split("\n\n[", 1)
            seen += chunk.splitlines()
            offset = int(note.split("offset=")[1].split()[0].rstrip(".)]("))
        else:
            seen += part.splitlines()
            break
    assert seen == [f"row {i}" for i in range(1, total + 1)]


async def test_read_byte_cap_cuts_a_huge_line(h: Harness) -> None:
    line = "x" * (line_reader.MAX_READ_CHARS + 1000)
    (h.ws / "wide.txt").write_text("short\n" + line + "\nafter\n")
    out = await h.ok("read_file", file_path="wide.txt")
    assert out.startswith("short\nxxx")
    assert "middle of line 2" in out and "offset=3" in out
    assert len(out) < line_reader.MAX_READ_CHARS + 1000


async def test_read_with_big_offset_streams(h: Harness) -> None:
    line = b"0123456789" * 10 + b"\n"  # 101 bytes
    count = 400_000  # ~40 MB
    with open(h.ws / "huge.log", "wb") as handle:
        for _ in range(count // 1000):
            handle.write(line * 1000)
    tracemalloc.start()
    try:
        out = await h.ok("read_file", file_path="huge.log", offset=count - 1, limit=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == (line * 2).decode()
    assert peak < 8 * 1024 * 1024, peak


async def test_read_refusals(h: Harness) -> None:
    assert "not found" in await h.err("read_file", file_path="missing.txt")
    assert "not found" in await h.err("read_file", file_path="inside.txt/child")
    assert "list_dir" in await h.err("read_file", file_path="sub")
    (h.ws / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary" in await h.err("read_file", file_path="image.bin")
    (h.ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    assert "not valid utf-8" in await h.err("read_file", file_path="latin.txt")
    assert await h.ok("read_file", file_path="latin.txt", encoding="latin-1") == "café\n"
    assert "unknown encoding" in await h.err("read_file", file_path="latin.txt", encoding="nope")
    (h.ws / "hello16.txt").write_bytes("hello\n".encode("utf-16"))
    assert await h.ok("read_file", file_path="hello16.txt", encoding="utf-16") == "hello\n"
    os.mkfifo(h.ws / "fifo")
    assert "not a regular file" in await h.err("read_file", file_path="fifo")


# -- write_file ----------------------------------------------------------------------------------


async def test_write_creates_parents_and_overwrites(h: Harness) -> None:
    out = await h.ok("write_file", file_path="new/deep/file.txt", content="héllo\r\n")
    assert out == "Wrote 8 bytes to new/deep/file.txt"
    assert (h.ws / "new/deep/file.txt").read_bytes() == "héllo\r\n".encode()
    await h.ok("write_file", file_path="new/deep/file.txt", content="")
    assert (h.ws / "new/deep/file.txt").read_bytes() == b""
    assert leftovers(h.ws) == []


async def test_write_keeps_permissions_and_follows_inside_links(h: Harness) -> None:
    script = h.ws / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    await h.ok("write_file", file_path="run.sh", content="new")
    assert script.read_text() == "new"
    assert script.stat().st_mode & 0o777 == 0o750
    await h.ok("write_file", file_path="link_in", content="via link")
    assert (h.ws / "link_in").is_symlink()
    assert (h.ws / "inside.txt").read_text() == "via link"


async def test_write_refusals(h: Harness) -> None:
    assert "folder" in await h.err("write_file", file_path="sub", content="x")
    assert "is a file" in await h.err("write_file", file_path="inside.txt/x.txt", content="x")
    assert (h.ws / "inside.txt").read_text() == "inside\n"
    await h.err("write_file", file_path="x.txt")  # content missing
    assert not (h.ws / "x.txt").exists()


# -- edit_file -----------------------------------------------------------------------------------


async def test_edit_unique_match(h: Harness) -> None:
    (h.ws / "crlf_code.py").write_bytes(b"def f():\r\n    return 1\r\n")
    out = await h.ok(
        "edit_file", file_path="crlf_code.py", old_string="return 1", new_string="return 2"
    )
    assert out == "Edited crlf_code.py: 1 replacement"
    assert (h.ws / "crlf_code.py").read_bytes() == b"def f():\r\n    return 2\r\n"


async def test_edit_is_literal(h: Harness) -> None:
    (h.ws / "re.txt").write_text("price: (a+b)*c.\n")
    await h.ok(
        "edit_file", file_path="re.txt", old_string="(a+b)*c.", new_string=r"\1 $1 \n \\g<0>"
    )
    assert (h.ws / "re.txt").read_text() == "price: \\1 $1 \\n \\\\g<0>\n"


async def test_edit_zero_or_many_matches_write_nothing(h: Harness) -> None:
    target = h.ws / "many.txt"
    target.write_text("a x a x a\n")
    before = target.stat().st_mtime_ns
    message = await h.err("edit_file", file_path="many.txt", old_string="zzz", new_string="y")
    assert "0 matches" in message
    message = await h.err("edit_file", file_path="many.txt", old_string="a", new_string="b")
    assert "3 times" in message and "replace_all" in message
    assert target.read_text() == "a x a x a\n"
    assert target.stat().st_mtime_ns == before
    out = await h.ok(
        "edit_file", file_path="many.txt", old_string="a", new_string="b", replace_all=True
    )
    assert out == "Edited many.txt: 3 replacements"
    assert target.read_text() == "b x b x b\n"
    assert leftovers(h.ws) == []


async def test_edit_refusals(h: Harness) -> None:
    await h.err("edit_file", file_path="inside.txt", old_string="", new_string="x")
    await h.err("edit_file", file_path="inside.txt", old_string="in", new_string="in")
    assert "not found" in await h.err(
        "edit_file", file_path="nope.txt", old_string="a", new_string="b"
    )
    (h.ws / "blob.bin").write_bytes(b"ab\x00cd")
    assert "binary" in await h.err(
        "edit_file", file_path="blob.bin", old_string="ab", new_string="x"
    )
    assert (h.ws / "blob.bin").read_bytes() == b"ab\x00cd"


# -- list_dir, mkdir -----------------------------------------------------------------------------


async def test_list_dir(h: Harness) -> None:
    (h.ws / "sub" / "z").mkdir()
    (h.ws / "sub" / "a.txt").write_text("")
    (h.ws / "sub" / ".hidden").write_text("")
    root = (await h.ok("list_dir")).splitlines()
    assert root == sorted(root)
    assert "sub/" in root and "inside.txt" in root and "link_out_dir@" in root
    assert (await h.ok("list_dir", path="sub")).splitlines() == [
        ".hidden",
        "a.txt",
        "inner.txt",
        "link_up@",
        "z/",
    ]
    assert "empty" in await h.ok("list_dir", path="sub/z")
    assert "read_file" in await h.err("list_dir", path="inside.txt")
    assert "not found" in await h.err("list_dir", path="nowhere")


async def test_mkdir(h: Harness) -> None:
    assert await h.ok("mkdir", path="x/y/z") == "Created folder x/y/z"
    assert (h.ws / "x/y/z").is_dir()
    assert "already exists" in await h.ok("mkdir", path="x/y")
    assert "file" in await h.err("mkdir", path="inside.txt")
    assert "parent" in await h.err("mkdir", path="p/q", parents=False)
    assert not (h.ws / "p").exists()


# -- move ----------------------------------------------------------------------------------------


async def test_move_rename_and_into_folder(h: Harness) -> None:
    assert await h.ok("move", source="inside.txt", destination="renamed.txt") == (
        "Moved inside.txt to renamed.txt"
    )
    assert (h.ws / "renamed.txt").read_text() == "inside\n" and not (h.ws / "inside.txt").exists()
    assert await h.ok("move", source="renamed.txt", destination="sub") == (
        "Moved renamed.txt to sub/renamed.txt"
    )
    await h.ok("move", source="sub", destination="moved/dir")
    assert (h.ws / "moved/dir/inner.txt").read_text() == "inner\n"


async def test_move_refusals(h: Harness) -> None:
    (h.ws / "other.txt").write_text("other\n")
    assert "already exists" in await h.err("move", source="inside.txt", destination="other.txt")
    assert (h.ws / "other.txt").read_text() == "other\n"
    assert "Not found" in await h.err("move", source="ghost", destination="g2")
    assert "into itself" in await h.err("move", source="sub", destination="sub/deeper")
    assert "root" in await h.err("move", source=".", destination="sub/x")
    assert (h.ws / "sub" / "inner.txt").exists()


async def test_move_symlink_moves_the_link_not_its_target(h: Harness) -> None:
    before = h.layout.snapshot_outside()
    await h.ok("move", source="link_out_file", destination="sub/moved_link")
    moved = h.ws / "sub" / "moved_link"
    assert moved.is_symlink() and os.readlink(moved) == "../outside/secret.txt"
    await h.ok("move", source="link_out_dir", destination="sub/moved_dir_link")
    assert (h.ws / "sub" / "moved_dir_link").is_symlink()
    assert h.layout.snapshot_outside() == before


# -- remove --------------------------------------------------------------------------------------


async def test_remove_files_and_folders(h: Harness) -> None:
    assert await h.ok("remove", path="inside.txt") == "Removed inside.txt"
    (h.ws / "empty").mkdir()
    assert "empty folder" in await h.ok("remove", path="empty")
    assert "recursive" in await h.err("remove", path="sub")
    assert (h.ws / "sub" / "inner.txt").exists()
    await h.ok("remove", path="sub", recursive=True)
    assert not (h.ws / "sub").exists()
    assert "Not found" in await h.err("remove", path="sub")


async def test_remove_never_removes_the_root(h: Harness) -> None:
    for root in (".", "", "sub/..", str(h.ws), str(h.layout.ws_link), "./"):
        result = await h.call("remove", path=root, recursive=True)
        assert result.is_error, root
    assert (h.ws / "inside.txt").exists()


async def test_remove_links_not_targets(h: Harness) -> None:
    before = h.layout.snapshot_outside()
    # a tree holding links that point out: rmtree must not follow them
    (h.ws / "tree" / "inner").mkdir(parents=True)
    (h.ws / "tree" / "inner" / "to_outside").symlink_to(h.layout.outside)
    (h.ws / "tree" / "to_secret").symlink_to(h.layout.outside / "secret.txt")
    await h.ok("remove", path="tree", recursive=True)
    await h.ok("remove", path="link_out_dir", recursive=True)
    await h.ok("remove", path="link_out_file")
    await h.ok("remove", path="sub/link_up", recursive=True)
    assert not os.path.lexists(h.ws / "link_out_dir")
    assert h.layout.snapshot_outside() == before
    assert (h.layout.outside / "secret.txt").read_text() == SECRET


# -- hostile paths, asserted on the filesystem ---------------------------------------------------


async def test_hostile_paths_for_every_tool(h: Harness) -> None:
    before = h.layout.snapshot_outside()
    inside_before = snapshot(h.ws)
    for bad in hostile_paths(h.layout):
        attempts = [
            ("read_file", {"file_path": bad}),
            ("write_file", {"file_path": bad, "content": "HACKED"}),
            ("edit_file", {"file_path": bad, "old_string": "top", "new_string": "HACKED"}),
            ("list_dir", {"path": bad}),
            ("mkdir", {"path": bad + "/newdir"}),
            ("move", {"source": "inside.txt", "destination": bad + "/dropped.txt"}),
            ("remove", {"path": bad + "/secret.txt"}),
            ("remove", {"path": bad + "/dir", "recursive": True}),
        ]
        if bad != "link_out_file":  # removing/moving that link itself is legal
            attempts += [
                ("move", {"source": bad, "destination": "stolen"}),
                ("remove", {"path": bad, "recursive": True}),
                ("move", {"source": "inside.txt", "destination": bad}),
            ]
        for name, args in attempts:
            result = await h.registry.call(name, args)
            assert result.is_error, (name, args, result.content)
            assert "top secret" not in result.content
    assert h.layout.snapshot_outside() == before
    assert snapshot(h.ws) == inside_before


async def test_bad_text_paths_are_clean_errors(h: Harness) -> None:
    before = h.layout.snapshot_outside()
    for bad in bad_text_paths():
        for name, args in [
            ("read_file", {"file_path": bad}),
            ("write_file", {"file_path": bad, "content": "x"}),
            ("edit_file", {"file_path": bad, "old_string": "a", "new_string": "b"}),
            ("mkdir", {"path": bad}),
            ("move", {"source": bad, "destination": "x"}),
            ("move", {"source": "inside.txt", "destination": bad}),
            ("remove", {"path": bad}),
        ]:
            result = await h.registry.call(name, args)
            assert result.is_error, (name, args)
            assert "Traceback" not in result.content
            assert len(result.content) < 400
    assert (h.ws / "inside.txt").read_text() == "inside\n"
    assert h.layout.snapshot_outside() == before


async def test_workspace_through_a_symlink_and_absolute_inside(layout: Layout) -> None:
    h = Harness(layout, workspace=layout.ws_link)
    assert await h.ok("read_file", file_path="inside.txt") == "inside\n"
    assert await h.ok("read_file", file_path=str(layout.ws_link / "sub/inner.txt")) == "inner\n"
    assert await h.ok("read_file", file_path=str(layout.ws / "a..b")) == "legal name\n"
    await h.ok("write_file", file_path=str(layout.ws / "abs.txt"), content="abs")
    assert (layout.ws / "abs.txt").read_text() == "abs"
    await h.err("read_file", file_path="../outside/secret.txt")


async def test_offsets_across_skip_chunk_boundaries(h: Harness) -> None:
    # Lines of 1 to 300 bytes over ~3 MB: the lines read at offsets whose start falls just
    # before, at and after each multiple of a power of two from 4 KiB to 1 MiB (whatever the
    # skipper's chunk is among them: 1 MiB now) are the file's own lines.
    lines = [("x" * (i % 300)) + f"{i}\n" for i in range(20_000)]
    data = "".join(lines)
    (h.ws / "ragged.txt").write_text(data)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    offsets = {1, len(lines)}
    for boundary in {times << power for power in range(12, 21) for times in (1, 2)}:
        index = next(i for i, start in enumerate(starts) if start >= boundary)
        offsets.update(range(index - 1, index + 3))  # 1-based offsets around the boundary line
    for offset in sorted(offsets):
        out = await h.ok("read_file", file_path="ragged.txt", offset=offset, limit=2)
        assert out == "".join(lines[offset - 1 : offset + 1]), offset


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\r", max_size=5), max_size=30),
    trailing_newline=st.booleans(),
    count=st.integers(min_value=1, max_value=40),
)
def test_the_mapped_line_skip_agrees_with_the_plain_one(
    lines: list[str], trailing_newline: bool, count: int
) -> None:
    """Large files count lines on a memory map with numpy; it must match the plain count."""
    import io
    import tempfile

    data = "\n".join(lines).encode() + (b"\n" if trailing_newline and lines else b"")
    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.flush()
        answers = []
        for fast_min in (0, 1 << 62):  # mapped (when numpy is there), then plain
            handle.seek(0)
            raw = io.BufferedReader(io.FileIO(os.dup(handle.fileno()), "rb"))
            with raw:
                result = line_reader.skip_lines(raw, count, fast_min_bytes=fast_min)
                answers.append((result, raw.tell(), raw.read()))
        assert answers[0] == answers[1], (data, count)
