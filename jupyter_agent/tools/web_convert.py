"""Turning a fetched body into text the model reads, in a child process the fetch deadline kills.

``web_fetch`` pages are written by whoever the model was sent to, so the conversion is hostile
input for a Python parser: BeautifulSoup and markdownify are pure Python, hold the GIL, cannot be
cancelled from a thread, and markdownify's whitespace regular expressions backtrack
quadratically over long runs of spaces and tabs (80 KB of them took seconds, 1.2 MB minutes).
So the conversion runs here, in a child process (``web.py`` starts it and kills it at the
deadline), and the page is prepared so that every step is linear in its size:

* the HTML is cut at ``MAX_HTML_BYTES`` before it is converted (the caller does it and says so);
* whitespace runs in text are collapsed before markdownify sees them, exactly as markdownify
  would collapse them (a run with a line break becomes one newline, any other run one space),
  so its own regular expressions only meet runs of length one; in ``<pre>`` the leading and
  trailing blank lines are stripped here, by string methods, instead of by its backtracking
  ``[ \\n]*$``;
* an element nested deeper than ``MAX_DEPTH`` is replaced by its plain text (the converter
  recurses once per level, and re-reads each level's text);
* the final clean-up (trailing blanks on lines, runs of blank lines) is a linear pass over lines.

This module imports only the standard library at the top (bs4 and markdownify are imported when an
HTML page is converted) and no other module of the package, so that the child starts fast as
``python -I <this file>``. The protocol: stdin carries one JSON header line
(``{"kind": "html"|"json", "charset": ...}``) and then the body; stdout gets the text as UTF-8;
a failure is a message on stderr and exit status 1.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

#: The most HTML bytes converted by default; a longer page is cut first (at a tag boundary) and
#: the result says so. markdownify converts about 0.3 to 1 MB of ordinary HTML a second (slower
#: on a busy machine), so 2 MiB leaves most of the 30 s deadline for the fetch itself.
MAX_HTML_BYTES = 2 * 1024 * 1024
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


def decode(body: bytes, charset: str | None) -> str:
    """``body`` decoded with ``charset`` if Python knows it, else UTF-8; bad bytes replaced."""
    encoding = "utf-8"
    if charset:
        with contextlib.suppress(LookupError):
            encoding = codecs.lookup(charset).name
    return body.decode(encoding, errors="replace")


def cut_html(html: bytes, cap: int = MAX_HTML_BYTES) -> tuple[bytes, bool]:
    """At most ``cap`` bytes of ``html``, cut before the last tag that starts inside the cap."""
    if len(html) <= cap:
        return html, False
    boundary = html.rfind(b"<", 0, cap)
    return html[: boundary if boundary > 0 else cap], True


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


def json_to_text(body: bytes, charset: str | None, complete: bool) -> str:
    """JSON pretty-printed; anything that is not valid JSON (or was cut) as it came."""
    text = decode(body, charset)
    if complete:
        # RecursionError: JSON nested deeper than Python recurses.
        with contextlib.suppress(ValueError, RecursionError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return text


def convert(header: dict[str, Any], body: bytes) -> str:
    """The text for one request of the protocol (see the module docstring)."""
    kind = header.get("kind")
    charset = header.get("charset")
    if kind == "html":
        return html_to_markdown(body, charset)
    if kind == "json":
        return json_to_text(body, charset, bool(header.get("complete", True)))
    raise ValueError(f"unknown kind {kind!r}")


def main() -> int:
    """Read one request from stdin, write the text to stdout."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * MAX_DEPTH + 1000))
    header_line = sys.stdin.buffer.readline()
    body = sys.stdin.buffer.read()
    try:
        text = convert(json.loads(header_line), body)
    except Exception as exc:  # reported to the parent, which turns it into the tool's error
        sys.stderr.write(f"{type(exc).__name__}: {exc}"[:2000])
        return 1
    sys.stdout.buffer.write(text.encode("utf-8", errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
