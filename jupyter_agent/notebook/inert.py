"""Where untrusted text becomes output: sanitized HTML for Jupyter, escaped text for terminals.

A notebook runs what it shows: JupyterLab and Notebook 7 render the outputs of a cell the user
ran as *trusted* (no sanitizer), so raw HTML in the model's answer or in a tool result — an
``<img onerror>``, a ``<script>``, a ``javascript:`` link, an SVG with ``onload`` — would run in
the Jupyter origin, which can call the server's REST API (terminals, kernels), and again every
time a saved, signed notebook is opened. A terminal obeys escape sequences the same way: OSC 52
writes the clipboard, a bare carriage return or an erase-line rewrites what an approval shows.

So every display of this package is built here, and nowhere else (``tests/notebook/test_inert``
walks the source to keep it so):

* ``markdown_bundle`` — the model's Markdown (the answer, ``%agent history``). It is rendered to
  HTML in Python (mistune, with raw HTML *escaped*: ``<script>`` shows as the text
  ``<script>``) and that HTML is cleaned by nh3 (the ammonia allowlist sanitizer) that keeps no
  ``style``, no ``class`` but ``math``, no event handler, and links only to ``http``, ``https``,
  ``mailto`` or relative targets. Images become links, so a model cannot make the page fetch an
  address (a URL with the notebook's data in its query) by writing ``![](…)``. The bundle holds
  ``text/html`` and ``text/plain`` and no ``text/markdown``: the frontend's own Markdown
  renderer, which does not sanitize trusted output, never sees the model's text.
* ``html_bundle`` / ``view_html`` — the package's own markup (tool views, the static record,
  approvals, notices, tables), with untrusted text put in through ``html_text`` (escaped, and
  invisible characters made visible). It too passes nh3, with an allowlist of the tags, the
  ``style`` properties and the ``data:image/png`` thumbnails the views use, so a view that forgot
  to escape still cannot make anything active.
* ``visible`` — the one function that makes text safe for a terminal (and shows an approval's
  arguments as they are): control characters, ESC (so no CSI or OSC), a bare carriage return,
  bidi overrides and isolates, zero-width and other invisible format characters are written as
  escapes (``\\x1b``, ``\\r``, ``\\u202e``); newline and tab stay.

Why render Markdown here instead of sending escaped Markdown: the proof is then about one
allowlist sanitizer's output, not about every corner of the frontend's Markdown parser (entity
references, autolinks, link reference definitions, HTML blocks), which differs between
JupyterLab, Notebook 7, VS Code and GitHub.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache
from typing import Any

import nh3

# -- terminal text --------------------------------------------------------------------------

#: Unicode categories that draw nothing or steer the terminal: controls (C0, C1, DEL), format
#: characters (bidi embeddings, overrides and isolates, zero-width space/joiners, word joiner,
#: BOM, tag characters), surrogates, unassigned code points, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})

#: Letters and marks that draw as blank space: Hangul fillers, variation selectors (which can
#: carry a hidden payload after any character); U+FE0F, the emoji presentation selector, stays.
_INVISIBLE_EXTRA = frozenset(
    {0x115F, 0x1160, 0x3164, 0xFFA0, *range(0xFE00, 0xFE0F), *range(0xE0100, 0xE01F0)}
)

_NAMED_ESCAPES = {"\r": "\\r", "\x1b": "\\x1b", "\x00": "\\x00"}


def _escape_char(char: str) -> str:
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _is_hidden(char: str) -> bool:
    if char in "\n\t":
        return False
    if " " <= char <= "~":
        return False
    return ord(char) in _INVISIBLE_EXTRA or unicodedata.category(char) in _HIDDEN_CATEGORIES


def visible(text: str) -> str:
    """``text`` with every control, escape, bidi, zero-width and other invisible character
    written as an escape (``\\x1b``, ``\\r``, ``\\u202e``, ``\\u200b``); newline, tab, CR-LF kept.

    What a terminal may be given and what an approval shows: nothing in it moves the cursor,
    clears the screen, sets the title or the clipboard (OSC 0, OSC 52), reorders what follows
    (bidi) or hides characters (zero-width), so what is read is what the text holds."""
    if text.isascii() and text.isprintable():
        return text
    # A CR right before a newline ends a line as the newline would (Windows line ends): kept.
    return "\r\n".join(
        "".join(_escape_char(char) if _is_hidden(char) else char for char in part)
        for part in text.split("\r\n")
    )


# -- HTML -----------------------------------------------------------------------------------

#: Link targets a rendered answer may keep (relative links stay: a file beside the notebook).
_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")
_URL_IGNORED = re.compile(r"[\x00-\x20\x7f]")

#: What Markdown renders to, and no more (no ``img``: see ``_markdown``).
_MARKDOWN_TAGS = frozenset(
    {
        "a", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
        "h6", "hr", "i", "input", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup",
        "table", "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
_MARKDOWN_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
    "input": {"checked", "disabled"},
}
_MARKDOWN_VALUES = {"input": {"type": {"checkbox"}}}

#: The tags and ``style`` properties the package's own views are drawn with.
_VIEW_TAGS = frozenset({"details", "img", "summary"}) | _MARKDOWN_TAGS
_VIEW_STYLE_PROPERTIES = frozenset(
    {
        "border", "border-left", "color", "font-family", "font-size", "font-style", "margin",
        "margin-left", "max-height", "overflow", "padding", "padding-left", "white-space",
    }
)  # fmt: skip
_THUMBNAIL_PREFIX = "data:image/png;base64,"


#: The classes of the element a dollar sign that is not math sits in: JupyterLab and Notebook 7
#: typeset HTML output with MathJax, which would pair any two ``$`` of a text (``$0.14, and ...
#: $0.01``) as math; it skips an element of these classes (MathJax 3, and 2's name).
_NOT_MATH = "mathjax_ignore tex2jax_ignore"
_FENCED_DOLLAR = f'<span class="{_NOT_MATH}">$</span>'


def _fence_dollars(escaped: str) -> str:
    """Escaped text with each ``$`` in an element LaTeX typesetters skip. Math the Markdown has
    (``$x^2$``, ``$$...$$``) was already taken by the parser and is sent as ``\\(...\\)``."""
    return escaped.replace("$", _FENCED_DOLLAR)


def _markdown_attribute(tag: str, name: str, value: str) -> str | None:
    if name == "href" and not _allowed_link(value):
        return None
    return value


def _view_attribute(tag: str, name: str, value: str) -> str | None:
    if name == "src":  # only the thumbnails' PNG data (Pillow re-encoded every one of them)
        return value if tag == "img" and value.startswith(_THUMBNAIL_PREFIX) else None
    if name == "href" and not _allowed_link(value):
        return None
    return value


def _allowed_link(url: str) -> bool:
    # As a browser reads it: tabs, newlines and other controls inside a URL are dropped
    # (``java\tscript:`` is ``javascript:``).
    scheme = _SCHEME.match(_URL_IGNORED.sub("", url))
    return scheme is None or scheme.group(1).lower() in _LINK_SCHEMES


def _clean_markdown_html(markup: str) -> str:
    return nh3.clean(
        markup,
        tags=set(_MARKDOWN_TAGS),
        clean_content_tags={"script", "style"},
        attributes=_MARKDOWN_ATTRIBUTES,
        tag_attribute_values=_MARKDOWN_VALUES,
        allowed_classes={"span": {"math", *_NOT_MATH.split()}, "div": {"math"}},
        url_schemes=set(_LINK_SCHEMES),
        attribute_filter=_markdown_attribute,
    )


def view_html(markup: str) -> str:
    """The package's own markup, cleaned by the allowlist (what ``InertHTML`` holds)."""
    return nh3.clean(
        markup,
        tags=set(_VIEW_TAGS),
        clean_content_tags={"script", "style"},
        attributes={
            "*": {"style"},
            "a": {"href", "title"},
            "img": {"src", "alt"},
        },
        filter_style_properties=set(_VIEW_STYLE_PROPERTIES),
        url_schemes={*_LINK_SCHEMES, "data"},
        attribute_filter=_view_attribute,
    )


def html_text(text: str) -> str:
    """Untrusted text for a place in HTML markup: escaped, invisible characters made visible."""
    return html.escape(visible(text))


@lru_cache(maxsize=1)
def _markdown() -> Any:
    """mistune's Markdown with raw HTML escaped, unsafe links as text and images as links
    (built on first use: ``%load_ext`` does not pay for importing mistune)."""
    import mistune

    class InertRenderer(mistune.HTMLRenderer):
        def __init__(self) -> None:
            super().__init__(escape=True)

        # text, and raw HTML shown as text: a dollar sign is a dollar sign (``_fence_dollars``)
        def text(self, text: str) -> str:
            return _fence_dollars(str(super().text(text)))

        def inline_html(self, html: str) -> str:
            return _fence_dollars(str(super().inline_html(html)))

        def block_html(self, html: str) -> str:
            return _fence_dollars(str(super().block_html(html)))

        def safe_url(self, url: str) -> str:
            return html.escape(url) if _allowed_link(url) else ""

        def link(self, text: str, url: str, title: str | None = None) -> str:
            if not _allowed_link(url):
                return text
            return str(super().link(text, url, title))

        def image(self, text: str, url: str, title: str | None = None) -> str:
            # a link, not an image: the page fetches nothing the model names (an address
            # with the notebook's data in its query)
            return self.link(f"image: {text}" if text else "image", url, title)

    return mistune.create_markdown(
        renderer=InertRenderer(),
        plugins=["table", "strikethrough", "url", "task_lists", "math"],
    )


def markdown_html(text: str) -> str:
    """The model's Markdown as inert HTML: raw HTML shown as text, no active content."""
    return _clean_markdown_html(str(_markdown()(text)))


# -- display bundles ------------------------------------------------------------------------


def markdown_bundle(text: str) -> dict[str, str]:
    """A display of Markdown from the model or a tool: sanitized HTML and visible plain text."""
    return {"text/html": markdown_html(text), "text/plain": visible(text)}


def html_bundle(markup: str, plain: str) -> dict[str, str]:
    """A display of the package's own ``markup`` (cleaned) and its ``plain`` text form."""
    return {"text/html": view_html(markup), "text/plain": visible(plain)}


def text_bundle(plain: str) -> dict[str, str]:
    """A display with only text (visible)."""
    return {"text/plain": visible(plain)}


#: A plan's nonce, as ``plan_mode`` makes it (hex: nothing else can ride on it into the markup).
_PLAN_NONCE = re.compile(r"[0-9a-f]{32}")


def go_button_bundle(nonce: str, plain: str) -> dict[str, str]:
    """The Go button under a ``%%agent --plan`` answer: the package's own control, fixed markup
    (the allowlist of ``view_html`` has no button), carrying the kernel's ``nonce`` for the plan,
    which the co-authoring extension sends back as ``%agent go --plan NONCE``."""
    if not _PLAN_NONCE.fullmatch(nonce):
        raise ValueError("a plan's nonce is 32 hex digits")
    markup = (
        "<div style='margin: 4px 0;'>▶ Review the plan, then "
        f"<button class='jp-agent-go jp-mod-styled jp-mod-accept' data-agent-go='{nonce}' "
        "title='Insert a %agent go cell below and run it'>Go</button>"
        " — or run <code>%agent go</code>.</div>"
    )
    return {"text/html": markup, "text/plain": visible(plain)}


def is_answer(metadata: Any) -> bool:
    """Whether a display's ``metadata`` marks it as (a segment of) the model's answer."""
    if not isinstance(metadata, dict):
        return False
    mark = metadata.get("jupyter_agent")
    return isinstance(mark, dict) and mark.get("kind") == "answer"


class InertMarkdown:
    """Markdown shown inert: what ``display()`` of an answer or a transcript gets.

    The display's metadata says what it is (``{"jupyter_agent": {"kind": "answer"}}``), so a
    reader of a saved notebook finds the answer without a Markdown part to look for."""

    def __init__(self, text: str, kind: str = "answer") -> None:
        self.text = text
        self.kind = kind

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
        return markdown_bundle(self.text), {"jupyter_agent": {"kind": self.kind}}
