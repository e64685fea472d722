"""The HTML conversion keeps a page's text and structure: html-to-markdown's depth limit is
guarded (it skips what lies deeper than 1,024 levels and only warns), and headings, tables,
links, lists and code blocks of the benchmark suite's pages come through one for one.

These call the converter in-process (``web_convert.html_to_markdown``, what the child runs);
``tests/hostile/test_web.py`` covers the child, the deadline and the event loop.
"""

from __future__ import annotations

import re

import pytest

from benchmarks.fig10_web_fetch import make_page
from jupyter_agent.tools.web_convert import MAX_DEPTH, flatten_deep, html_to_markdown


def nested(levels: int, tag: str = "div") -> bytes:
    """``levels`` nested elements with a word of text at each level, opening and closing."""
    opening = "".join(f"<{tag}>open{i} " for i in range(levels))
    closing = "".join(f" close{i}</{tag}>" for i in reversed(range(levels)))
    return (opening + "innermost" + closing).encode()


@pytest.mark.parametrize("levels", [1_500, 5_000, 20_000])
@pytest.mark.parametrize("tag", ["div", "blockquote", "span"])
def test_text_at_every_level_of_deep_nesting_is_kept(levels: int, tag: str) -> None:
    text = html_to_markdown(nested(levels, tag), "utf-8")
    words = set(re.findall(r"(?:open|close)\d+|innermost", text))
    expected = {f"open{i}" for i in range(levels)} | {f"close{i}" for i in range(levels)}
    missing = (expected | {"innermost"}) - words
    assert not missing, f"{len(missing)} words lost, e.g. {sorted(missing)[:5]}"


def test_deep_unclosed_inline_elements_keep_their_text() -> None:
    page = b"".join(b"<b>w%d " % i for i in range(10_000))
    text = html_to_markdown(page, "utf-8")
    assert all(f"w{i}" in text for i in range(0, 10_000, 7))
    assert "w9999" in text


def test_deep_nesting_keeps_the_shallow_structure() -> None:
    # Flattened below MAX_DEPTH only: the page's own headings, links and lists around the deep
    # part still come out as Markdown.
    page = (
        b"<h1>Title</h1><p>See <a href='/x'>this</a>.</p><ul><li>one</li><li>two</li></ul>"
        + nested(3_000)
        + b"<h2>After</h2><table><tr><th>k</th></tr><tr><td>v</td></tr></table>"
    )
    text = html_to_markdown(page, "utf-8")
    assert "# Title" in text
    assert "[this](/x)" in text
    assert "- one" in text
    assert "## After" in text
    assert "| k |" in text
    assert "open2999" in text and "close0" in text


def test_flatten_deep_counts_depth_on_the_tokens() -> None:
    page = "<div>" * (MAX_DEPTH + 5) + "a &lt; b" + "</div>" * (MAX_DEPTH + 5) + "<p>after</p>"
    flat = flatten_deep(page)
    assert flat.count("<div>") == MAX_DEPTH
    assert flat.count("</div>") == MAX_DEPTH
    assert "a &lt; b" in flat  # text stays escaped: it is HTML again
    assert flat.endswith("<p>after</p>")
    # void elements and repeated <li> do not count as levels
    assert flatten_deep("<br>" * 500 + "<li>x" * 500) == "<br>" * 500 + "<li>x</li>" * 499 + "<li>x"
    assert flatten_deep("<p>a<b>b</b></p><p>c</p>", 0) == "\nab\n\nc\n"


def test_flattened_script_and_style_stay_out() -> None:
    page = b"<div>" * 2_000 + b"<script>SCRIPT</script><style>STYLE</style>text" + b"</div>" * 2_000
    text = html_to_markdown(page, "utf-8")
    assert "text" in text
    assert "SCRIPT" not in text and "STYLE" not in text


def _structure(html: str) -> dict[str, int]:
    return {
        "headings": len(re.findall(r"<h[1-6][ >]", html)),
        "tables": html.count("<table"),
        "table rows": html.count("<tr"),
        "links": len(re.findall(r"<a href=\"([^\"]*)\"", html)),
        "list items": html.count("<li"),
        "code blocks": html.count("<pre"),
    }


def _markdown_structure(text: str) -> dict[str, int]:
    lines = text.split("\n")
    return {
        "headings": sum(1 for line in lines if re.match(r"#{1,6} ", line)),
        "tables": len(re.findall(r"(?:^|\n)\n\| ", "\n" + text)),
        "table rows": sum(
            1 for line in lines if line.startswith("| ") and not line.startswith("| ---")
        ),
        "links": len(re.findall(r"\]\(([^)]*)\)", text)),
        "list items": sum(1 for line in lines if line.startswith("- ")),
        "code blocks": text.count("```") // 2,
    }


@pytest.mark.parametrize("size", [20_000, 1_000_000])
def test_the_benchmark_pages_keep_their_structure(size: int) -> None:
    page = make_page(size)
    text = html_to_markdown(page, "utf-8")
    expected = _structure(page.decode())
    assert expected["headings"] > 10
    assert _markdown_structure(text) == expected
    # the links keep their targets and the code its lines
    assert re.findall(r"\]\(([^)]*)\)", text) == re.findall(r'<a href="([^"]*)"', page.decode())
    assert text.count("    return sum(r.value for r in rows)") == expected["code blocks"]
    assert "tracking" not in text and "color:red" not in text
