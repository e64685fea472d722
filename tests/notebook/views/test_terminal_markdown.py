"""The terminal's Markdown renderer on what the model may write: what it shows, whatever the text.

``TextRenderer`` feeds every ``TextDelta`` to ``MarkdownLines`` on the main thread. A paragraph
with a mark that never closes (``2 * 3``, a lone backtick) made each feed rescan every space of
the unfinished line and recount the marks before it: 10,000 characters took 12 s, 24,000 took
143 s. A line of ``[`` made the link pattern try every ``[`` to the end of the line. The time
these take is a goal of benchmark figure 24; here, what is shown must not change: the streamed
output is compared with the original algorithm's.
"""

from __future__ import annotations

import random

import pytest

from jupyter_agent.notebook.views.terminal_markdown import CODE, RESET, MarkdownLines, inline


class FirstAlgorithm(MarkdownLines):
    """The first ``_words_so_far``, verbatim: the reference for what is shown."""

    def _words_so_far(self) -> str:
        pending = self._pending
        if self._in_code or not pending:
            return ""
        if not self._line_started and not (pending[0].isalpha() or pending[0] in "\"'(“"):
            return ""
        cut = pending.rfind(" ")
        while cut > 0:
            words = pending[: cut + 1]
            ticks, stars = words.count("`"), words.replace("**", "").count("*")
            if ticks % 2 == 0 and words.count("**") % 2 == 0 and stars % 2 == 0:
                self._pending = pending[cut + 1 :]
                return self._line(words, partial=True)
            cut = pending.rfind(" ", 0, cut)
        return ""


def stream(lines: MarkdownLines, text: str, piece: int) -> str:
    """What ``lines`` writes for ``text`` fed ``piece`` characters at a time."""
    shown = "".join(lines.feed(text[at : at + piece]) for at in range(0, len(text), piece))
    return shown + lines.flush()


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("Cost is 2 * 3 dollars " + "word " * 2400, 8),  # 12,000 characters
        ("Note `" + "ab " * 4000, 3),
        ("Note **" + "ab " * 4000, 3),
    ],
    ids=["star", "backtick", "double-star"],
)
def test_an_unclosed_mark_streamed_shows_what_it_showed_at_once(text: str, piece: int) -> None:
    # the time it takes: benchmark figure 24 (the same three paragraphs)
    shown = stream(MarkdownLines(), text, piece)
    assert shown == stream(FirstAlgorithm(), text, len(text))  # the same text at the end


def test_a_line_of_brackets_is_shown_as_it_is() -> None:
    # the time it takes: benchmark figure 24 (the same three lines)
    for hostile in ["[" * 60_000, "[a](" * 15_000, "[a](b" * 12_000]:
        assert inline(hostile) == hostile


def test_links_and_code_still_render() -> None:
    assert inline("see [the docs](https://x.example/a_b) and `x[0]`") == (
        f"see \x1b[4mthe docs{RESET} (https://x.example/a_b) and {CODE}x[0]{RESET}"
    )


def test_streamed_output_is_what_the_first_algorithm_showed() -> None:
    """Random Markdown-ish text in random pieces: the same writes, piece by piece."""
    rng = random.Random(20261125)
    alphabet = ["a", "b", " ", " ", "*", "**", "`", "\n", "_", "# ", "- ", "[x](y)", "```\n"]
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        ends = sorted(
            {*rng.sample(range(1, len(text) + 1), k=rng.randint(1, len(text))), len(text)}
        )
        pieces = [text[a:b] for a, b in zip([0, *ends], ends, strict=False)]
        ours, first = MarkdownLines(), FirstAlgorithm()
        for piece in pieces:
            assert ours.feed(piece) == first.feed(piece), (text, pieces)
        assert ours.flush() == first.flush(), (text, pieces)
