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
from pathlib import Path

import pytest

from jupyter_agent.events import TextDelta, ToolCallFinished, ToolCallStarted
from jupyter_agent.notebook.render import TextRenderer

REPO = Path(__file__).resolve().parents[2]

ANSWER = (
    "# Result\n\nThis is **bold** and `code`, *gently*.\n\n- one\n- two\n\n"
    "```python\nx = 1\n```\n\nA title\x1b]0;pwned\x07 and a\rreturn.\n"
)

HELPERS = f'''
import sys
import time

sys.path.insert(0, {str(REPO / "tests")!r})
from fake_anthropic import FakeAnthropic, Reply, text, tool_use

from jupyter_agent.notebook.extension import get_magics
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


def test_a_long_paragraph_streams_by_words_with_its_marks_closed() -> None:
    """A paragraph is often one long line: it shows as it comes, never with a half-open mark
    (``**bo`` would print raw asterisks) and never a raw escape of the model's."""
    from jupyter_agent.notebook.terminal_markdown import BOLD, RESET, MarkdownLines

    lines = MarkdownLines()
    assert lines.feed("This is **bo") == "This is "
    assert lines.feed("ld** and\x1b[2J more") == f"{BOLD}bold{RESET} and\\x1b[2J "
    assert lines.feed(" text\n") == "more text\n"
    assert lines.feed("# Head") == ""  # a heading waits for its line
    assert lines.feed("ing\n") == f"{BOLD}\x1b[4mHeading{RESET}\n"
