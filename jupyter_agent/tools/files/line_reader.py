"""Reading a window of lines from a text file of any size, in bounded memory and time.

``read_file`` answers ``offset``/``limit`` windows of files that may be gigabytes long or hold one
gigabyte-long line. The lines before the window are counted in bytes, without decoding
(``skip_lines``: on a memory map with numpy for large files — as fast as ``tail`` — else in
chunks of one reused buffer); the window itself is decoded and read in pieces, so one huge line is
never loaded whole, and it is capped at ``MAX_READ_LINES`` lines and about ``MAX_READ_CHARS``
characters with a note saying where to go on.
"""

from __future__ import annotations

import contextlib
import io
import os

from ..base import ToolFailure

__all__ = [
    "FAST_SKIP_MIN_BYTES",
    "MAX_READ_CHARS",
    "MAX_READ_LINES",
    "count_lines",
    "past_the_end",
    "read_lines",
    "skip_lines",
]

#: read_file returns at most this many lines per call ...
MAX_READ_LINES = 2000
#: ... and at most this many characters (about 256 KB).
MAX_READ_CHARS = 256 * 1024
#: Lines to skip are counted in chunks of this many bytes (one reused buffer) ...
_SKIP_CHUNK = 1024 * 1024
#: ... or, on a memory map, this many at a time (numpy's compare makes a same-sized temporary).
_MAPPED_CHUNK = 4 * 1024 * 1024
#: From this size on, lines are counted on a memory map with numpy when it is installed (its
#: vectorised compare counts several times faster than ``bytes.count``, and a map needs no copy).
FAST_SKIP_MIN_BYTES = 64 * 1024 * 1024
#: Lines are read in pieces of at most this many characters, so one huge line is never loaded.
_READ_PIECE = 64 * 1024


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def skip_lines(
    raw: io.BufferedReader, count: int, *, fast_min_bytes: int = FAST_SKIP_MIN_BYTES
) -> int | None:
    """Move past ``count`` lines; None if done, else how many lines the file has (fewer).

    Large files go through ``_skip_lines_mapped`` when numpy is available; both give the same
    answer and leave the file at the same position (a property test checks it).
    """
    try:
        size = os.fstat(raw.fileno()).st_size
    except OSError:
        size = 0
    if size and size >= fast_min_bytes and raw.tell() == 0:
        try:
            import numpy  # noqa: F401  (optional: only to count faster)
        except ImportError:
            pass
        else:
            return _skip_lines_mapped(raw, count, size)
    return _skip_lines(raw, count)


def _skip_lines_mapped(raw: io.BufferedReader, count: int, size: int) -> int | None:
    """``_skip_lines`` on a read-only memory map, counting newlines with numpy, chunk by chunk.

    Each counted chunk's pages are dropped from this process right away (``MADV_DONTNEED``), so
    the resident memory stays at one chunk however large the file.
    """
    import mmap

    import numpy as np

    skipped = 0
    with mmap.mmap(raw.fileno(), size, access=mmap.ACCESS_READ) as mapped:
        data = np.frombuffer(mapped, dtype=np.uint8)
        chunk = is_newline = data[:0]
        try:
            position = 0
            while position < size:
                chunk = data[position : position + _MAPPED_CHUNK]
                is_newline = chunk == 10
                found = int(np.count_nonzero(is_newline))
                if skipped + found >= count:
                    index = int(np.flatnonzero(is_newline)[count - skipped - 1])
                    offset = position + index + 1
                    raw.seek(offset)
                    return count if offset == size else None
                skipped += found
                with contextlib.suppress(OSError, AttributeError, ValueError):
                    mapped.madvise(mmap.MADV_DONTNEED, position, len(chunk))
                position += len(chunk)
            ends_in_line = size > 0 and int(data[size - 1]) != 10
        finally:
            del data, chunk, is_newline  # views of the map: it cannot close while they live
    raw.seek(size)
    return skipped + (1 if ends_in_line else 0)


def _skip_lines(raw: io.BufferedReader, count: int) -> int | None:
    """Move past ``count`` lines; None if done, else how many lines the file has (fewer)."""
    skipped = 0
    ends_in_line = False
    buffer = bytearray(_SKIP_CHUNK)  # one buffer for the whole skip: no allocation per chunk
    while True:
        size = raw.readinto(buffer)
        if not size:
            return skipped + (1 if ends_in_line else 0)
        newlines = buffer.count(b"\n", 0, size)
        if skipped + newlines < count:
            skipped += newlines
            ends_in_line = not buffer.endswith(b"\n", 0, size)
            continue
        rest = bytes(memoryview(buffer)[:size]).split(b"\n", count - skipped)[-1]
        raw.seek(-len(rest), io.SEEK_CUR)
        if not rest and not raw.peek(1):
            return count  # the wanted line would start exactly at the end of the file
        return None


def past_the_end(shown: str, start: int, lines: int) -> ToolFailure:
    plural = "" if lines == 1 else "s"
    return ToolFailure(f"offset {start} is past the end of {shown} (it has {lines} line{plural})")


def read_lines(
    stream: io.TextIOWrapper,
    shown: str,
    start: int,
    limit: int | None,
    line_no: int,
    max_chars: int = MAX_READ_CHARS,
) -> str:
    """Lines ``start`` .. ``start + limit - 1``, streamed, capped at ``MAX_READ_LINES`` lines and
    ``max_chars`` characters; with a note if capped.

    ``line_no`` is the line the stream is at (lines before ``start`` may be skipped already).
    """
    partial = False
    while line_no < start:
        piece = stream.readline(_READ_PIECE)
        if not piece:
            raise past_the_end(shown, start, line_no - (0 if partial else 1))
        partial = not piece.endswith("\n")
        if not partial:
            line_no += 1
    wanted = MAX_READ_LINES if limit is None else min(limit, MAX_READ_LINES)
    parts: list[str] = []
    size = 0
    lines_done = 0
    cut_in_line = False
    full = False
    while lines_done < wanted:
        room = max_chars - size
        if room <= 0:
            # the cap fell on a line's end: the page stops there, the next line is not begun
            full = bool(stream.read(1))
            break
        piece = stream.readline(min(room, _READ_PIECE) + 1)
        if not piece:
            break
        if len(piece) > room:
            parts.append(piece[:room])
            cut_in_line = True
            break
        parts.append(piece)
        size += len(piece)
        if piece.endswith("\n"):
            lines_done += 1
        elif size >= max_chars:
            cut_in_line = bool(stream.read(1))
            break
    text = "".join(parts)
    last = start + lines_done - (0 if cut_in_line else 1)
    cap = f"{max_chars // 1024} KB" if max_chars >= 4096 else f"{max_chars:,} characters"
    if cut_in_line:
        return text + (
            f"\n\n[Output capped at about {cap} in the middle of line "
            f"{last}. To read further, call read_file with offset={last + 1}.]"
        )
    if full:
        return text + (
            f"\n\n[Showing lines {start}-{last} of {shown}; output capped at about {cap}. "
            f"To read further, call read_file with offset={last + 1}.]"
        )
    capped_by_us = limit is None or limit > MAX_READ_LINES
    if lines_done == wanted and capped_by_us and stream.read(1):
        return text + (
            f"\n\n[Showing lines {start}-{last} of {shown}; the file continues. read_file returns "
            f"at most {MAX_READ_LINES} lines per call. To read further, call read_file with "
            f"offset={last + 1} (and a limit of up to {MAX_READ_LINES}).]"
        )
    return text
