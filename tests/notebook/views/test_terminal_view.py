"""Terminal IPython shows a finished call in place of its "running" line and the answer's
Markdown readably (issue 25) — on a TTY; to a pipe or a file both stay plain.

Run in a real pseudo-terminal (pexpect), the output read back through a tiny screen model that
knows the sequences a terminal gets from us (cursor up, erase down, colours): what is on screen
at the end is what the user reads. The model's own escape sequences stay escaped text
(``inert.visible``): no OSC, no CSI and no bare carriage return of the model's reaches it.
"""

from __future__ import annotations

import io
import os
import re
import sys
import unicodedata
from pathlib import Path

import pytest

from jupyter_agent.events import TextDelta, ToolCallFinished, ToolCallStarted
from jupyter_agent.notebook.views.text_renderer import TextRenderer

REPO = Path(__file__).resolve().parents[3]

ANSWER = (
    "# Result\n\nThis is **bold** and `code`, *gently*.\n\n- one\n- two\n\n"
    "```python\nx = 1\n```\n\nA title\x1b]0;pwned\x07 and a\rreturn.\n"
)

HELPERS = f'''
import sys
import unicodedata
import time

sys.path.insert(0, {str(REPO / "tests")!r})
from fake_anthropic import FakeAnthropic, Reply, text, tool_use

from jupyter_agent.notebook.front.extension import get_magics
from jupyter_agent.providers.anthropic import AnthropicProvider


def slow(seconds: float) -> str:
    """Waits a while.

    Args:
        seconds: how long
    """
    time.sleep(seconds)
    return "slept"


def setup(ip):
    fake = FakeAnthropic(Reply([tool_use("t1", "slow", {{"seconds": 2}})]), text({ANSWER!r}))
    magics = get_magics(ip)
    magics.use_provider(AnthropicProvider(client=fake.client()))
    magics.agent.add_tool(slow)
'''

#: The sequences we write ourselves: colours, cursor up, erase down.
OURS = re.compile(r"\x1b\[(?:[0-9;]*m|\d+A|J)")


def screen(raw: str) -> list[str]:
    """What a terminal shows after ``raw`` (no wrapping: the pty is wide)."""
    rows: list[list[str]] = [[]]
    row = column = 0
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\x1b":
            match = OURS.match(raw, index)
            assert match, f"an escape sequence we do not write: {raw[index : index + 12]!r}"
            code = match.group(0)
            if code.endswith("A"):
                row = max(0, row - int(code[2:-1]))
            elif code.endswith("J"):
                del rows[row + 1 :]
                del rows[row][column:]
            index = match.end()
            continue
        if char == "\r":
            column = 0
        elif char == "\n":
            row += 1
            while len(rows) <= row:
                rows.append([])
        else:
            line = rows[row]
            line.extend(" " * (column - len(line)))
            if column < len(line):
                line[column] = char
            else:
                line.append(char)
            column += 1
        index += 1
    return ["".join(line).rstrip() for line in rows]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_terminal_ipython_replaces_the_running_line_and_renders_markdown(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    (tmp_path / "helpers.py").write_text(HELPERS)
    ipython = Path(sys.executable).with_name("ipython")
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(PYTHONPATH=str(REPO), TERM="xterm", IPYTHONDIR=str(tmp_path / "ipython"))
    child = pexpect.spawn(
        str(ipython),
        ["--simple-prompt", "--no-banner", "--colors=NoColor", "--no-confirm-exit"],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )
    try:
        child.expect(r"In \[1\]: ")
        for line in ["%load_ext jupyter_agent", "import helpers; helpers.setup(get_ipython())"]:
            child.sendline(line)
            child.expect(r"In \[\d+\]: ")
        child.sendline("get_ipython().run_cell_magic('agent', '', 'wait, then sum up')")
        child.expect(r"In \[\d+\]: ")
        raw = child.before
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "slow(seconds=2) · running" in raw  # it was shown while the call ran
    shown = screen(raw.split("wait, then sum up')", 1)[1])
    assert not [line for line in shown if "· running" in line], shown
    assert any("slow(seconds=2) · done" in line for line in shown), shown
    assert "Result" in shown and "# Result" not in shown, shown
    assert "This is bold and code, gently." in shown, shown
    assert "• one" in shown and "• two" in shown, shown
    assert "    x = 1" in shown and not [line for line in shown if "```" in line], shown
    assert "A title\\x1b]0;pwned\\x07 and a\\rreturn." in shown, shown
    assert "\x1b]" not in raw


def test_to_a_pipe_the_text_stays_plain_and_both_lines_stay() -> None:
    out = io.StringIO()
    renderer = TextRenderer(out)
    renderer.handle(ToolCallStarted("t1", "slow", {"seconds": 2}))
    renderer.tick()
    renderer.handle(ToolCallFinished("t1", "slow", "slept", False, 2.0))
    renderer.handle(TextDelta("# Result\n\n**bold**\n"))
    renderer.close(interrupted=False)
    text = out.getvalue()
    assert "slow(seconds=2) · running" in text and "slow(seconds=2) · done" in text
    assert "# Result\n\n**bold**\n" in text and "\x1b" not in text


def test_a_call_that_asks_is_never_shown_running_before_its_question() -> None:
    """Issue 11/15 under load: the agent's loop may reach the approval after the pump's idle tick
    (a slow loop said "· running" for a call that waited for y/N). A call that asks is held back
    until its question, then shown waiting; a sibling that runs is shown running meanwhile."""
    out = io.StringIO()
    renderer = TextRenderer(out)
    renderer.handle(ToolCallStarted("t1", "run_bash", {"command": "make"}, asks=True))
    renderer.handle(ToolCallStarted("t2", "slow", {"seconds": 2}))
    renderer.tick()  # the pump went idle before the question came
    assert "run_bash" not in out.getvalue()
    assert "slow(seconds=2) · running" in out.getvalue()
    renderer.handle(ToolCallFinished("t2", "slow", "slept", False, 2.0))
    assert "run_bash" not in out.getvalue()
    renderer.mark_waiting("t1", True)
    renderer.mark_waiting("t1", False)
    renderer.handle(ToolCallFinished("t1", "run_bash", "built", False, 1.0))
    renderer.close(interrupted=False)
    lines = [line for line in out.getvalue().splitlines() if "run_bash(" in line]
    assert len(lines) == 2 and lines[0].endswith("· waiting for your approval"), lines
    assert "· done" in lines[1], lines


def test_a_long_paragraph_streams_by_words_with_its_marks_closed() -> None:
    """A paragraph is often one long line: it shows as it comes, never with a half-open mark
    (``**bo`` would print raw asterisks) and never a raw escape of the model's."""
    from jupyter_agent.notebook.views.terminal_markdown import BOLD, RESET, MarkdownLines

    lines = MarkdownLines()
    assert lines.feed("This is **bo") == "This is "
    assert lines.feed("ld** and\x1b[2J more") == f"{BOLD}bold{RESET} and\\x1b[2J "
    assert lines.feed(" text\n") == "more text\n"
    assert lines.feed("# Head") == ""  # a heading waits for its line
    assert lines.feed("ing\n") == f"{BOLD}\x1b[4mHeading{RESET}\n"


def cell_width(char: str) -> int:
    """Columns a terminal gives ``char``: marks none, East Asian wide and fullwidth two."""
    if unicodedata.category(char) in {"Mn", "Me"}:
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def wrapped_screen(raw: str, columns: int) -> list[str]:
    """What a ``columns``-wide terminal shows after ``raw``: long lines wrap onto the next row,
    a mark joins the character before it, a wide character that does not fit starts a row."""
    rows: list[list[str]] = [[]]
    row = column = 0
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\x1b":
            match = OURS.match(raw, index)
            assert match, f"an escape sequence we do not write: {raw[index : index + 12]!r}"
            code = match.group(0)
            if code.endswith("A"):
                row = max(0, row - int(code[2:-1]))
            elif code.endswith("J"):
                del rows[row + 1 :]
                del rows[row][column:]
            index = match.end()
            continue
        index += 1
        if char == "\r":
            column = 0
            continue
        if char == "\n":
            row, column = row + 1, 0
        width = cell_width(char)
        if char != "\n" and column + width > columns:
            row, column = row + 1, 0
        while len(rows) <= row:
            rows.append([])
        if char == "\n":
            continue
        line = rows[row]
        if width == 0:
            if column:
                line[column - 1] += char
            continue
        line.extend(" " * (column + width - len(line)))
        line[column : column + width] = [char, *[""] * (width - 1)]
        column += width
    return ["".join(line).rstrip() for line in rows]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


EARLIER = ["The agent said it will delete ~/data", "Denied: rm -rf ~/data"]


@pytest.mark.parametrize(
    "argument",
    [
        "a" + "\u0301" * 59,  # combining marks: draw nothing, yet a character each
        "a" + "\u20dd" * 59,  # enclosing marks
        "a" + "\ufe00" * 59,  # variation selectors: written as \ufe00, six columns each
        "表" * 40,  # wide: two columns each
        "a\u200b" * 30,  # zero-width spaces: written as \u200b
    ],
    ids=["combining", "enclosing", "escaped", "wide", "zero-width"],
)
def test_replacing_running_lines_erases_no_line_above_them(
    argument: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model chooses the arguments a running line shows; however they draw, replacing the
    running lines erases exactly them — not the answer or the "Denied:" line above."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")
    out = Tty()
    renderer = TextRenderer(out)
    renderer.handle(TextDelta("".join(line + "\n" for line in EARLIER)))
    for k in range(3):
        arguments = {"file_path": f"f{k}{argument}", "pattern": argument}
        renderer.handle(ToolCallStarted(f"c{k}", "read_file", arguments))
    renderer.tick()
    before = wrapped_screen(out.getvalue(), 80)
    assert before[:2] == EARLIER and "".join(before).count("· running") == 3, before
    renderer.handle(ToolCallFinished("c0", "read_file", "ok", False, 0.01))
    shown = wrapped_screen(out.getvalue(), 80)
    assert shown[:2] == EARLIER, shown  # nothing above the running lines was erased
    text = "".join(shown)  # rows joined: a wrapped line reads whole
    assert text.count("file_path='f0") == 1 and text.count("· done") == 1, shown
    assert text.count("· running") == 2, shown  # c0's running line is gone, not left stale
