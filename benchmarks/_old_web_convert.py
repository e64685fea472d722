"""The HTML converter ``web_fetch`` used before html-to-markdown (BeautifulSoup + markdownify
with a linear preparation pass), kept here only as figure 10's context row.

A copy of ``jupyter_agent/tools/web_convert.py`` as of commit 09964ec, minus the child-process
protocol: it is called in-process, so it measures less than ``web_fetch`` paid with it (no child
start, no pipes). It needs bs4 and markdownify, which only the ``dev`` extra installs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

#: Elements nested deeper than this are replaced by their plain text before conversion.
MAX_DEPTH = 100

#: Elements whose content is never readable text.
DROPPED_ELEMENTS = (
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "svg",
    "canvas",
    "meta",
    "link",
)
_SPACES_AND_TABS = re.compile(r"[ \t]+")
_RUN_WITH_BREAK = re.compile(r" ?[\r\n][ \r\n]*")


def collapse_whitespace(text: str) -> str:
    """Each run of spaces, tabs and line breaks as markdownify collapses it, in linear time: a run
    holding a line break becomes ``"\\n"``, any other run ``" "``.

    Two substitutions that cannot backtrack: ``[ \\t]+`` ends where the run ends (nothing after
    it can fail), and once those runs are single spaces ``" ?[\\r\\n][ \\r\\n]*"`` gives up
    after at most two characters wherever it does not match.
    """
    text = _SPACES_AND_TABS.sub(" ", text)
    return _RUN_WITH_BREAK.sub("\n", text)


def strip_pre_newlines(text: str) -> str:
    """markdownify's ``strip_pre`` (blank lines before and after ``<pre>`` text), in linear time."""
    leading = len(text) - len(text.lstrip(" \n"))
    first_line = text.rfind("\n", 0, leading)
    if first_line >= 0:
        text = text[first_line + 1 :]
    return text.rstrip(" \n")


def clean_markdown(text: str) -> str:
    """Trailing spaces and tabs off every line, at most one blank line in a row, ends stripped;
    one pass over the lines (no regular expression that could backtrack)."""
    lines: list[str] = []
    blank_run = 0
    for line in text.split("\n"):
        line = line.rstrip(" \t")
        if line:
            blank_run = 0
        else:
            blank_run += 1
            if blank_run > 1:
                continue
        lines.append(line)
    return "\n".join(lines).strip()


def _prepare(soup: BeautifulSoup) -> None:
    """Drop non-content elements, flatten deep nesting and collapse whitespace, in place."""
    from bs4.element import Comment, Doctype, NavigableString, Tag

    for element in soup(DROPPED_ELEMENTS):
        element.decompose()
    # Depth-first walk with an explicit stack: (node, depth, inside <pre>). An element deeper
    # than MAX_DEPTH is not walked into: it is replaced by its text below (bs4's own unwrap is
    # quadratic on a deep chain; one replace per too-deep subtree is linear).
    too_deep: list[tuple[Tag, bool]] = []
    stack: list[tuple[Any, int, bool]] = [(soup, 0, False)]
    while stack:
        node, depth, in_pre = stack.pop()
        for child in list(node.children):
            if isinstance(child, Tag):
                child_in_pre = in_pre or child.name == "pre"
                if depth + 1 > MAX_DEPTH:
                    too_deep.append((child, child_in_pre))
                else:
                    stack.append((child, depth + 1, child_in_pre))
            elif (
                not in_pre
                and isinstance(child, NavigableString)
                and not isinstance(child, Comment | Doctype)
            ):
                text = str(child)
                collapsed = collapse_whitespace(text)
                if collapsed != text:
                    child.replace_with(NavigableString(collapsed))
    for tag, in_pre in too_deep:
        text = tag.get_text()
        tag.replace_with(NavigableString(text if in_pre else collapse_whitespace(text)))


def html_to_markdown(html: bytes, charset: str | None) -> str:
    """Readable Markdown from an HTML page (callers cut it to ``MAX_HTML_BYTES`` first)."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    class _Converter(MarkdownConverter):
        def convert_pre(self, el: Any, text: str, parent_tags: Any) -> str:
            base: Any = super()
            result: str = base.convert_pre(el, strip_pre_newlines(text), parent_tags)
            return result

    soup = BeautifulSoup(html, "html.parser", from_encoding=charset)
    _prepare(soup)
    converter = _Converter(heading_style="ATX", strip=["img"], strip_pre=None)
    return clean_markdown(str(converter.convert_soup(soup)))
