"""search_text finds matches in lines of any length (issue 11 point 7).

ripgrep's ``--json`` output holds a matched line whole on one output line; the tool used to read
those with a 64 MB line limit and silently stopped at the first longer one, dropping every match
after it. Both backends must report such a line, shortened like any other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.search.pysearch import MAX_LINE_CHARS
from jupyter_agent.tools.search.search import SearchTextTool, find_ripgrep

BACKENDS = ["ripgrep", "python"]
#: More than the 64 MB the old reader could hold in one line.
HUGE = 65 * 1024 * 1024


def tool(ws: Path, backend: str) -> SearchTextTool:
    if backend == "ripgrep" and find_ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    return SearchTextTool(ToolContext(ws), backend=backend)  # type: ignore[arg-type]


def shortened(rel: str, number: int, line: str) -> str:
    more = len(line) - MAX_LINE_CHARS
    return f"{rel}:{number}: {line[:MAX_LINE_CHARS]} [… {more:,} characters cut …]"


@pytest.fixture(scope="module")
def huge_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    with open(ws / "a_huge.txt", "wb") as handle:
        handle.write(b"needle ")
        handle.write(b"y" * HUGE)
        handle.write(b"\nneedle two\n")
    (ws / "b_after.txt").write_text("needle after\n")
    return ws


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_match_in_a_line_over_64_mb_is_reported_and_later_ones_too(
    huge_workspace: Path, backend: str
) -> None:
    out = await tool(huge_workspace, backend).execute({"pattern": "needle"})
    first = "needle " + "y" * (MAX_LINE_CHARS - 7)
    assert out.splitlines() == [
        f"a_huge.txt:1: {first} [… {HUGE + 7 - MAX_LINE_CHARS:,} characters cut …]",
        "a_huge.txt:2: needle two",
        "b_after.txt:1: needle after",
    ]


# The streamed path is taken for every line over ``HELD_LINE_BYTES``; with the threshold made
# small, lines of every kind go through it and must come out as the held path gives them.

LONG_LINES = {
    "escapes.txt": ('needle "quoted" back\\slash\ttab é ü 日本 ' * 300 + "\n").encode(),
    "crlf.txt": ("needle " + "z" * 5000 + "\r\r\n").encode(),
    "no_newline.txt": ("needle " + "w" * 5000).encode(),
    "latin1.txt": ("needle café " * 500 + "\n").encode("latin-1"),  # rg sends base64 bytes
    "controls.txt": ("needle \x01\x02\x1f " * 700 + "\n").encode(),
    "emoji.txt": ("needle 😀 " * 900 + "\n").encode(),
}


@pytest.mark.parametrize("name", sorted(LONG_LINES))
async def test_streamed_long_lines_come_out_like_held_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from jupyter_agent.tools.search import ripgrep_output

    (tmp_path / name).write_bytes(LONG_LINES[name])
    held = await tool(tmp_path, "ripgrep").execute({"pattern": "needle"})
    python = await tool(tmp_path, "python").execute({"pattern": "needle"})
    monkeypatch.setattr(ripgrep_output, "HELD_LINE_BYTES", 1024)
    streamed = await tool(tmp_path, "ripgrep").execute({"pattern": "needle"})
    assert streamed == held == python
    text = LONG_LINES[name].decode("utf-8", "replace").removesuffix("\n").rstrip("\r")
    assert streamed == shortened(name, 1, text)


def _rg_match(path: str, number: int, lines: dict[str, str]) -> bytes:
    message = {
        "type": "match",
        "data": {
            "path": {"text": path},
            "lines": lines,
            "line_number": number,
            "absolute_offset": 0,
            "submatches": [{"match": {"text": "n"}, "start": 0, "end": 1}] * 50,
        },
    }
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("piece", [1, 2, 3, 5, 7, 64, 4096])
def test_the_stream_parser_gives_the_same_answer_in_any_pieces(piece: int) -> None:
    import base64

    from jupyter_agent.tools.search.ripgrep_output import LongMatch, RipgrepOutput

    text = 'x\\"\\\\u0041\t"é日😀\x07' * 40 + "\r\n"
    raw = ("ab\xffc" * 100 + "\n").encode("latin-1")
    stream = (
        b'{"type":"begin","data":{"path":{"text":"p\\"q"}}}\n'
        + _rg_match('p"q', 3, {"text": text})
        + _rg_match("r", 9, {"bytes": base64.b64encode(raw).decode()})
        + b'{"type":"end","data":{"path":{"text":"r"},"binary_offset":null}}\n'
    )
    parser = RipgrepOutput(held_line_bytes=100)
    messages: list[object] = []
    for start in range(0, len(stream), piece):
        messages += parser.feed(stream[start : start + piece])
    messages += parser.close()
    assert [type(m).__name__ for m in messages] == ["dict", "LongMatch", "LongMatch", "dict"]
    first, second = messages[1], messages[2]
    assert isinstance(first, LongMatch) and isinstance(second, LongMatch)
    want = text.removesuffix("\n").rstrip("\r")
    assert (first.path, first.line_number, first.length) == ('p"q', 3, len(want))
    assert first.head == want[:MAX_LINE_CHARS]
    decoded = raw.decode("utf-8", "replace").removesuffix("\n")
    assert (second.path, second.line_number, second.length) == ("r", 9, len(decoded))
    assert second.head == decoded[:MAX_LINE_CHARS]
