"""Turning a fetched body into text the model reads, in a child process the fetch deadline kills.

``web_fetch`` pages are written by whoever the model was sent to, so the conversion is hostile
input for a parser. It is done by ``html-to-markdown`` (a Rust HTML5 parser and converter: linear
in the page on every hostile page we know, 10–20× faster than markdownify + BeautifulSoup were),
and still here, in a child process that ``web.py`` starts inside the reader sandbox and kills at
the deadline: native code cannot be cancelled from a thread, a page can be crafted to take
seconds of it (about 1 µs per element it makes the parser create or reconstruct), and a crash
of the parser ends the child, not the kernel. The child starts in about 30 ms (``python -I``
and one import).

* The HTML is cut at ``MAX_HTML_BYTES`` before it is converted (the caller does it and says so).
* Nesting: html-to-markdown skips whatever lies deeper than its traversal limit (1,024 levels)
  and only says so in a warning. When it does, the page is flattened here (``flatten_deep``:
  every element deeper than ``MAX_DEPTH`` is replaced by its text, in one linear pass of the
  standard library's tokenizer) and converted again, so no text is lost; if even that leaves
  the limit reached, the page's plain text is converted.

This module imports only the standard library at the top (html_to_markdown is imported when an
HTML page is converted) and no other module of the package, so that the child starts fast as
``python -I <this file>``. The protocol: stdin carries one JSON header line
(``{"kind": "html"|"json", "charset": ...}``) and then the body; stdout gets the text as UTF-8;
a failure is a message on stderr and exit status 1.
"""

from __future__ import annotations

import codecs
import contextlib
import html
import json
import re
import sys
from html.parser import HTMLParser
from typing import Any

#: The most HTML bytes converted by default; a longer page is cut first (at a tag boundary) and
#: the result says so. html-to-markdown converts about 10 MB of ordinary HTML a second, but a
#: crafted page of 2 MiB can take it 2 s; 2 MiB leaves most of the 30 s deadline for the fetch.
MAX_HTML_BYTES = 2 * 1024 * 1024
#: When a page is nested deeper than the converter goes, elements deeper than this are replaced
#: by their text before it is converted again.
MAX_DEPTH = 100

#: Elements whose content is never readable text (html-to-markdown drops script, style and
#: hidden elements itself; these it would keep as fallback text).
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
)
#: Elements with no end tag: never open, so never deeper.
VOID_ELEMENTS = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
#: Elements a start tag of the same name closes (``<li>a<li>b``): not counted twice.
SELF_CLOSING_SIBLINGS = frozenset(["p", "li", "dt", "dd", "tr", "td", "th", "option"])
#: Flattened elements that separate words: their text is set apart by a line break.
BLOCK_ELEMENTS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "td",
        "th",
        "tr",
        "ul",
    ]
)
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})""")


def decode(body: bytes, charset: str | None) -> str:
    """``body`` decoded with ``charset`` if Python knows it, else UTF-8; bad bytes replaced."""
    encoding = "utf-8"
    if charset:
        with contextlib.suppress(LookupError):
            encoding = codecs.lookup(charset).name
    return body.decode(encoding, errors="replace")


def sniff_charset(html_bytes: bytes) -> str | None:
    """The charset a ``<meta>`` tag declares in the first 4 KB of a page, if any."""
    match = _META_CHARSET.search(html_bytes, 0, 4096)
    return match.group(1).decode("ascii") if match else None


def cut_html(html: bytes, cap: int = MAX_HTML_BYTES) -> tuple[bytes, bool]:
    """At most ``cap`` bytes of ``html``, cut before the last tag that starts inside the cap."""
    if len(html) <= cap:
        return html, False
    boundary = html.rfind(b"<", 0, cap)
    return html[: boundary if boundary > 0 else cap], True


class _Flattener(HTMLParser):
    """Re-writes a page with every element deeper than ``max_depth`` replaced by its text.

    The depth is counted on the tokens (void elements never open; an end tag closes up to the
    nearest open element of its name, or nothing if none is open; ``<li>`` after an open ``<li>``
    closes it), which over-counts on sloppy markup, never under-counts by much: it only matters
    on a page the converter found over 1,024 levels deep, where flattening more is the safe side.
    Linear: each open element is pushed and popped once, and an end tag with nothing of its name
    open is dropped by a count, not a search.
    """

    def __init__(self, max_depth: int) -> None:
        super().__init__(convert_charrefs=True)
        self.max_depth = max_depth
        self.out: list[str] = []
        self.stack: list[str] = []
        self.open_count: dict[str, int] = {}
        self.dropped_open = 0  # flattened elements open whose text is never readable

    def _push(self, tag: str) -> None:
        self.stack.append(tag)
        self.open_count[tag] = self.open_count.get(tag, 0) + 1
        if len(self.stack) > self.max_depth and tag in DROPPED_ELEMENTS:
            self.dropped_open += 1

    def _pop(self) -> tuple[str, bool]:
        """The closed element's name and whether its tags were written out."""
        written = len(self.stack) <= self.max_depth
        tag = self.stack.pop()
        self.open_count[tag] -= 1
        if not written and tag in DROPPED_ELEMENTS:
            self.dropped_open -= 1
        return tag, written

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID_ELEMENTS:
            self.handle_startendtag(tag, attrs)
            return
        if tag in SELF_CLOSING_SIBLINGS and self.stack and self.stack[-1] == tag:
            self.handle_endtag(tag)
        self._push(tag)
        if len(self.stack) <= self.max_depth:
            self.out.append(self.get_starttag_text() or "")
        elif tag in BLOCK_ELEMENTS:
            self.out.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.stack) < self.max_depth:
            self.out.append(self.get_starttag_text() or "")
        elif tag in BLOCK_ELEMENTS:
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if not self.open_count.get(tag):
            return
        while True:
            closed, written = self._pop()
            if written:
                self.out.append(f"</{closed}>")
            elif closed in BLOCK_ELEMENTS:
                self.out.append("\n")
            if closed == tag:
                return

    def handle_data(self, data: str) -> None:
        if self.dropped_open:
            return
        raw = self.stack and self.stack[-1] in ("script", "style")
        if raw and len(self.stack) <= self.max_depth:
            self.out.append(data)  # raw text: the converter drops it whole
        else:
            self.out.append(html.escape(data, quote=False))

    def handle_decl(self, decl: str) -> None:
        if not self.stack:
            self.out.append(f"<!{decl}>")


def flatten_deep(page: str, max_depth: int = MAX_DEPTH) -> str:
    """``page`` with each element nested deeper than ``max_depth`` replaced by its text
    (``max_depth=0``: the page's plain text, escaped as HTML)."""
    flattener = _Flattener(max_depth)
    flattener.feed(page)
    flattener.close()
    return "".join(flattener.out)


def html_to_markdown(body: bytes, charset: str | None) -> str:
    """Readable Markdown from an HTML page (callers cut it to ``MAX_HTML_BYTES`` first)."""
    import html_to_markdown as converter

    options = converter.ConversionOptions(
        heading_style="atx",
        skip_images=True,
        exclude_selectors=list(DROPPED_ELEMENTS),
    )
    too_deep = converter.WarningKind.DEPTH_LIMIT_EXCEEDED

    def run(page: str) -> tuple[str, bool]:
        result = converter.convert(page, options)
        return result.content or "", any(w.kind == too_deep for w in result.warnings)

    page = decode(body, charset or sniff_charset(body))
    text, skipped = run(page)
    if skipped:
        text, skipped = run(flatten_deep(page))
    if skipped:
        text, _ = run(flatten_deep(page, 0))
    return text.strip()


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
