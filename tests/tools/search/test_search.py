"""search_text and search_files: ripgrep and the Python fallback, each tested and compared."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hostile_layout import SECRET, Layout, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.registry import ToolRegistry
from jupyter_agent.tools.search import ripgrep, search
from jupyter_agent.tools.search.search import SearchFilesTool, SearchTextTool, find_ripgrep

BACKENDS = ["ripgrep", "python"]
needs_rg = pytest.mark.skipif(find_ripgrep() is None, reason="ripgrep is not installed")


def make_tree(layout: Layout) -> Path:
    ws = layout.ws
    files: dict[str, bytes] = {
        "a.txt": b"needle in a.txt\nnothing\n",
        "a-b": b"needle dash\n",
        "a/x.py": b"def needle():\n    return 'Needle'\n",
        "a/b/deep.py": b"# NEEDLE upper\n",
        ".hidden": b"needle hidden\n",
        ".git/config": b"needle in git\n",
        "build/out.txt": b"needle built\n",
        "src/build/keep.txt": b"needle not ignored: /build is anchored\n",
        "logs/app.log": b"needle log\n",
        "logs/keep.log": b"needle kept by negation\n",
        "data/.gitignore": b"*.csv\n!important.csv\n",
        "data/t.csv": b"needle,csv\n",
        "data/important.csv": b"needle,important\n",
        "data/sub/more.json": b'{"needle": 1}\n',
        "bin.dat": b"needle\x00binary\n",
        "crlf.txt": b"needle crlf\r\nsecond\r\n",
        "latin.txt": "needle café\n".encode("latin-1"),
        "long.txt": b"needle " + b"y" * 2000 + b"\n",
        "unicode.txt": "naïve needle ünïcode\n".encode(),
        "no_newline.txt": b"last needle",
    }
    for rel, data in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (ws / ".gitignore").write_bytes(b"/build\n*.log\n!keep.log\n")
    (ws / "a" / "to_secret").symlink_to(layout.outside / "secret.txt")
    (ws / "a" / "to_inside").symlink_to(ws / "a.txt")
    (ws / "linked_dir").symlink_to(ws / "a")
    (layout.outside / "needle.txt").write_text("needle outside\n")
    (layout.evil / "needle.txt").write_text("needle evil\n")
    return ws


@pytest.fixture
def layout(layout: Layout) -> Layout:
    """The shared hostile layout with the search tree planted in its workspace."""
    make_tree(layout)
    return layout


def text_tool(layout: Layout, backend: str) -> SearchTextTool:
    if backend == "ripgrep" and find_ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    return SearchTextTool(ToolContext(layout.ws), backend=backend)  # type: ignore[arg-type]


def files_tool(layout: Layout, backend: str) -> SearchFilesTool:
    if backend == "ripgrep" and find_ripgrep() is None:
        pytest.skip("ripgrep is not installed")
    return SearchFilesTool(ToolContext(layout.ws), backend=backend)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_text_output_and_skips(layout: Layout, backend: str) -> None:
    out = await text_tool(layout, backend).execute({"pattern": "needle"})
    lines = out.splitlines()
    assert lines == [
        ".hidden:1: needle hidden",
        "a/x.py:1: def needle():",
        "a-b:1: needle dash",
        "a.txt:1: needle in a.txt",
        "crlf.txt:1: needle crlf",
        "data/important.csv:1: needle,important",
        'data/sub/more.json:1: {"needle": 1}',
        "latin.txt:1: needle caf\ufffd",
        "logs/keep.log:1: needle kept by negation",
        "long.txt:1: needle " + "y" * (search.MAX_LINE_CHARS - 7) + " [… 1,507 characters cut …]",
        "no_newline.txt:1: last needle",
        "src/build/keep.txt:1: needle not ignored: /build is anchored",
        "unicode.txt:1: naïve needle ünïcode",
    ]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_text_options(layout: Layout, backend: str) -> None:
    tool = text_tool(layout, backend)
    ci = await tool.execute({"pattern": "NEEDLE", "case_insensitive": True, "path": "a"})
    assert ci.splitlines() == [
        "a/b/deep.py:1: # NEEDLE upper",
        "a/x.py:1: def needle():",
        "a/x.py:2:     return 'Needle'",
    ]
    assert (await tool.execute({"pattern": "needle", "glob": "*.py"})).splitlines() == [
        "a/x.py:1: def needle():"
    ]
    # a glob with a slash is anchored at the searched folder
    anchored = await tool.execute({"pattern": "needle", "path": "data", "glob": "sub/*.json"})
    assert anchored.splitlines() == ['data/sub/more.json:1: {"needle": 1}']
    # an explicit glob wins over .gitignore (as in ripgrep), but ignored folders stay skipped
    logs = await tool.execute({"pattern": "needle", "glob": "*.log"})
    assert logs.splitlines() == [
        "logs/app.log:1: needle log",
        "logs/keep.log:1: needle kept by negation",
    ]
    single = await tool.execute({"pattern": "needle", "path": "a/x.py"})
    assert single.splitlines() == ["a/x.py:1: def needle():"]
    capped = await tool.execute({"pattern": "needle", "max_results": 2})
    assert capped.splitlines()[:2] == [".hidden:1: needle hidden", "a/x.py:1: def needle():"]
    assert "Stopped at 2 matches" in capped.splitlines()[2]
    assert len(capped.splitlines()) == 3
    none = await tool.execute({"pattern": "haystack"})
    assert none == "No matches for 'haystack'"
    binary = await tool.execute({"pattern": "needle", "path": "bin.dat"})
    assert binary == "No matches for 'needle' in bin.dat"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_text_subfolder_keeps_root_gitignore(layout: Layout, backend: str) -> None:
    (layout.ws / "src" / "x.log").write_text("needle sub log\n")
    out = await text_tool(layout, backend).execute({"pattern": "needle", "path": "src"})
    assert out.splitlines() == ["src/build/keep.txt:1: needle not ignored: /build is anchored"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_python_only_regex_and_invalid_regex(layout: Layout, backend: str) -> None:
    registry = ToolRegistry()
    registry.register(text_tool(layout, backend))
    # look-behind: ripgrep's engine refuses it, so the Python search answers
    found = await registry.call("search_text", {"pattern": r"(?<=def )needle", "path": "a"})
    assert (found.is_error, found.content) == (False, "a/x.py:1: def needle():")
    back = await registry.call("search_text", {"pattern": r"(e)\1d", "path": "a"})
    assert back.content == "a/x.py:1: def needle():\na/x.py:2:     return 'Needle'"
    for bad in ("(", "[a-", "a{2,1}", "*x"):
        result = await registry.call("search_text", {"pattern": bad})
        assert result.is_error
        assert result.content.startswith(
            "Error: invalid arguments for search_text: invalid regular"
        )


@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_never_leaves_the_workspace(layout: Layout, backend: str) -> None:
    before = layout.snapshot_outside()
    tool = text_tool(layout, backend)
    registry = ToolRegistry()
    registry.register(tool)
    registry.register(files_tool(layout, backend))
    everything = await tool.execute({"pattern": ".", "max_results": 2000})
    assert "secret" not in everything and "outside" not in everything and "evil" not in everything
    assert "linked_dir" not in everything and "to_inside" not in everything
    for bad in (
        "..",
        "../outside",
        str(layout.outside),
        "../ws_evil",
        str(layout.evil),
        "link_out_dir",
        "link_out_file",
        "sub/link_up",
        "a/to_secret",
        "bad\x00",
    ):
        result = await registry.call("search_text", {"pattern": "needle|secret", "path": bad})
        assert result.is_error, bad
        assert "top secret" not in result.content and "needle outside" not in result.content
        result = await registry.call("search_files", {"pattern": "**/*", "path": bad})
        assert result.is_error, bad
    for bad_glob in ("../*", "/etc/*", "**/../../*", "!*.py"):
        result = await registry.call("search_files", {"pattern": bad_glob})
        assert result.is_error, bad_glob
        result = await registry.call("search_text", {"pattern": "x", "glob": bad_glob})
        assert result.is_error, bad_glob
    assert layout.snapshot_outside() == before


@pytest.mark.parametrize("backend", BACKENDS)
async def test_search_files(layout: Layout, backend: str) -> None:
    tool = files_tool(layout, backend)
    assert (await tool.execute({"pattern": "*.txt"})).splitlines() == [
        "a.txt",
        "crlf.txt",
        "inside.txt",
        "latin.txt",
        "long.txt",
        "no_newline.txt",
        "unicode.txt",
    ]
    assert (await tool.execute({"pattern": "**/*.py"})).splitlines() == ["a/b/deep.py", "a/x.py"]
    assert (await tool.execute({"pattern": "*.py", "path": "a"})).splitlines() == ["a/x.py"]
    # .gitignore always applies to search_files (data/.gitignore: "*.csv", "!important.csv")
    assert (await tool.execute({"pattern": "**/*.csv"})).splitlines() == ["data/important.csv"]
    assert (await tool.execute({"pattern": "**/*.log"})).splitlines() == ["logs/keep.log"]
    assert (await tool.execute({"pattern": "**/*.json", "path": "data"})).splitlines() == [
        "data/sub/more.json"
    ]
    every = (await tool.execute({"pattern": "**"})).splitlines()
    assert ".git/config" not in every and "build/out.txt" not in every
    assert "a/to_secret" not in every and not any(p.startswith("linked_dir") for p in every)
    assert ".hidden" in every and "src/build/keep.txt" in every
    assert await tool.execute({"pattern": "*.nothing"}) == "No files match '*.nothing'"


# -- the two backends agree ----------------------------------------------------------------------

TEXT_QUERIES: list[dict[str, Any]] = [
    {"pattern": "needle"},
    {"pattern": "needle", "max_results": 3},
    {"pattern": "NEEDLE", "case_insensitive": True},
    {"pattern": r"^\s+return"},
    {"pattern": r"needle$"},
    {"pattern": r"\bdash\b|csv"},
    {"pattern": "é|ï"},
    {"pattern": "needle", "path": "data"},
    {"pattern": "needle", "path": "src"},
    {"pattern": "needle", "glob": "*.csv"},
    {"pattern": "needle", "glob": "data/**"},
    {"pattern": "needle", "path": "crlf.txt"},
    {"pattern": "", "max_results": 500},
    {"pattern": "[a-z]+", "max_results": 7},
]


@needs_rg
@pytest.mark.parametrize("query", TEXT_QUERIES, ids=lambda q: repr(q)[:60])
async def test_backends_agree_on_search_text(layout: Layout, query: dict[str, Any]) -> None:
    rg = await text_tool(layout, "ripgrep").execute(dict(query))
    py = await text_tool(layout, "python").execute(dict(query))
    assert rg == py


@needs_rg
@pytest.mark.parametrize(
    "query",
    [{"pattern": p} for p in ("**", "*", "**/*.py", "a/**", "data/*", "**/keep*", ".*", "*/*")]
    + [{"pattern": "**", "path": "data"}, {"pattern": "*.log", "path": "logs"}],
    ids=lambda q: repr(q),
)
async def test_backends_agree_on_search_files(layout: Layout, query: dict[str, Any]) -> None:
    rg = await files_tool(layout, "ripgrep").execute(dict(query))
    py = await files_tool(layout, "python").execute(dict(query))
    assert rg == py


async def test_default_backend_switch(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which backend searched, seen from the processes it started (each search runs a child)."""
    spawned: list[list[str]] = []
    real = asyncio.create_subprocess_exec

    async def recording(*argv: Any, **options: Any) -> asyncio.subprocess.Process:
        spawned.append([str(part) for part in argv])
        return await real(*argv, **options)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", recording)
    tool = SearchTextTool(ToolContext(layout.ws))
    rg = find_ripgrep()
    monkeypatch.setattr(search, "DEFAULT_BACKEND", "python")
    await tool.execute({"pattern": "needle"})
    assert spawned and not any(rg in argv for argv in spawned), spawned
    if rg is not None:
        spawned.clear()
        monkeypatch.setattr(search, "DEFAULT_BACKEND", "auto")
        await tool.execute({"pattern": "needle"})
        assert any(rg in argv for argv in spawned), spawned


# -- property: random trees and ignore files, both backends give the same answer -----------------

_NAMES = st.sampled_from(["a", "b", "a.txt", "b.py", "c.log", ".h", "d-e", "x y", "Z", "é.txt"])
_RULES = st.sampled_from(
    [
        "*.log",
        "!c.log",
        "/a",
        "a/",
        "b",
        "*.txt",
        "!a.txt",
        "**/b.py",
        "Z/",
        "# comment",
        "x*",
        "a/*.txt",
        "**/a",
        "a/**",
        "!/a/b",
        "b/",
        "[ab].py",
        "?.txt",
        "\\#x",
    ]
)


@st.composite
def _trees(draw: st.DrawFn) -> dict[str, str]:
    paths = draw(st.lists(st.lists(_NAMES, min_size=1, max_size=3).map("/".join), max_size=12))
    tree: dict[str, str] = {}
    for p in paths:
        if any(other.startswith(p + "/") or p.startswith(other + "/") for other in tree):
            continue
        tree[p] = draw(st.sampled_from(["hit here\n", "miss\n", "hit\x00bin\n", "HIT\n"]))
    for folder in draw(st.lists(st.sampled_from(["", "a", "b", "a/b"]), max_size=2, unique=True)):
        gitignore = f"{folder}/.gitignore" if folder else ".gitignore"
        if not any(
            other.startswith(gitignore + "/") or gitignore.startswith(other + "/") for other in tree
        ):
            tree[gitignore] = "\n".join(draw(st.lists(_RULES, max_size=4))) + "\n"
    return tree


@needs_rg
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    tree=_trees(),
    subpath=st.sampled_from([None, "a", "b", "a/b"]),
    glob=st.sampled_from([None, "*.txt", "a/*", "**/b.py", "*", "**", "b/**", "[!a]*"]),
)
def test_property_backends_agree(
    tmp_path_factory: pytest.TempPathFactory,
    tree: dict[str, str],
    subpath: str | None,
    glob: str | None,
) -> None:
    import asyncio

    ws = tmp_path_factory.mktemp("agree")
    for rel, text in tree.items():
        path = ws / rel
        if path.exists() and path.is_dir():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    context = ToolContext(ws)
    query: dict[str, Any] = {"pattern": "hit", "case_insensitive": True}
    if subpath is not None:
        query["path"] = subpath
    if glob is not None:
        query["glob"] = glob

    async def both() -> list[tuple[str, str]]:
        out = []
        for tool_class, q in (
            (SearchTextTool, query),
            (SearchFilesTool, {"pattern": glob or "**", **({"path": subpath} if subpath else {})}),
        ):
            answers = []
            for backend in ("ripgrep", "python"):
                try:
                    answers.append(await tool_class(context, backend=backend).execute(dict(q)))
                except Exception as exc:  # a missing subpath is an error for both alike
                    answers.append(f"raised {type(exc).__name__}: {exc}")
            out.append((answers[0], answers[1]))
        return out

    for rg, py in asyncio.run(both()):
        assert rg == py, (tree, subpath, glob)
    assert SECRET not in str(snapshot(ws))


@needs_rg
@pytest.mark.parametrize("query", TEXT_QUERIES[:4], ids=lambda q: repr(q)[:60])
async def test_sorted_ripgrep_run_for_broad_patterns_agrees(
    layout: Layout, query: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the match budget the multi-threaded run gives way to rg's own sorted walk."""
    expected = await text_tool(layout, "python").execute(dict(query))
    monkeypatch.setattr(ripgrep, "UNSORTED_MATCH_BUDGET", 1)
    assert await text_tool(layout, "ripgrep").execute(dict(query)) == expected


_GLOB_PARTS = st.sampled_from(
    ["*", "**", "?", "a", "b", ".", "csv", "[ab]", "[!a]", "\\*", "/", "-", "é"]
)
_PATH_PARTS = st.sampled_from(["a", "b", ".", "csv", "*", "/", "ab", "x.csv", "-", "é"])


@settings(max_examples=1500, deadline=None)
@given(
    glob=st.lists(_GLOB_PARTS, min_size=1, max_size=7).map("".join),
    path=st.lists(_PATH_PARTS, min_size=1, max_size=8).map("".join),
)
def test_every_match_ends_with_the_globs_literal_suffix(glob: str, path: str) -> None:
    # search_files skips names without the suffix before running the glob's regex; that is only
    # right if no matching path can lack it.
    from jupyter_agent.tools.search.pysearch import Glob

    wanted = Glob(glob)
    if wanted.matches(path, False):
        assert path.encode().endswith(wanted.literal_suffix)


def test_literal_suffix_of_everyday_globs() -> None:
    from jupyter_agent.tools.search.pysearch import Glob

    assert Glob("**/*.csv").literal_suffix == b".csv"
    assert Glob("reports/q?.md").literal_suffix == b".md"
    assert Glob("data/**").literal_suffix == b""
    assert Glob("x[ab]").literal_suffix == b""
    assert Glob("**/café").literal_suffix == "café".encode()


def test_non_ascii_names_match_byte_by_byte_as_in_ripgrep() -> None:
    # ripgrep 14: `rg --files -g '?.txt'` lists a.txt but not é.txt; '??.txt' lists é.txt.
    from jupyter_agent.tools.search.pysearch import Glob

    assert Glob("?.txt").matches("a.txt", False)
    assert not Glob("?.txt").matches("é.txt", False)
    assert Glob("??.txt").matches("é.txt", False)
    assert Glob("*.txt").matches("é.txt", False)
    assert Glob("é.txt").matches("é.txt", False)


_ODD_NAMES = [
    "a{b},c.txt",
    "we*rd.csv",
    "q?.md",
    "[x].csv",
    "bang!.txt",
    "back\\slash.txt",
    "é.txt",
    "x.é",
    "sub/plain.csv",
    "sub/ignored.csv",
    "co:lon.txt",
    "dot.",
]


@needs_rg
@pytest.mark.parametrize(
    "pattern",
    [
        "**/*},c.txt",
        "**/a\\{b\\},c.txt",
        "**/a{x,[{]b[}]},c.txt",
        "**/*\\*rd.csv",
        "**/[[]x].csv",
        "**/*!.txt",
        "**/*\\\\slash.txt",
        "**/*.é",
        "*é.txt",
        "**/*.csv",
        "sub/*.csv",
        "**/q\\?.md",
        # rg reads a second ":" in --type-add as "name:include:types" and refuses the whole run
        "**/co:lon.txt",
        "*:lon.txt",
        # rg's file types see no name at all in one that ends with "." (as Rust's file_name)
        "*.",
        "**/dot.",
    ],
)
async def test_backends_agree_on_names_with_glob_characters(tmp_path: Path, pattern: str) -> None:
    # ripgrep is told to list only names ending like the glob (a file type, so .gitignore still
    # applies): the ending must reach it escaped, or it lists other files or none.
    for rel in _ODD_NAMES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / ".gitignore").write_text("ignored.csv\n")
    context = ToolContext(tmp_path)
    rg = await SearchFilesTool(context, backend="ripgrep").execute({"pattern": pattern})
    py = await SearchFilesTool(context, backend="python").execute({"pattern": pattern})
    assert rg == py
    assert not py.startswith("No files match"), py
    assert "ignored.csv" not in py


def _descendants_running(program: str) -> list[int]:
    """Our descendant processes whose command line names ``program``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = []
    for pid in parents:
        ancestor = pid
        while ancestor in parents and ancestor > 1:
            ancestor = parents[ancestor]
            if ancestor == os.getpid():
                with contextlib.suppress(OSError):
                    if program.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                        found.append(pid)
                break
    return found


@needs_rg
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_search_cancelled_at_any_moment_leaves_no_process(tmp_path: Path) -> None:
    # A search cancelled while its sandbox was still being set up left the sandbox's first
    # process behind, holding the pipes, and the cancelled call waited on them for ever.
    for n in range(200):
        (tmp_path / f"f{n}.txt").write_text("needle\n" * 100)
    tool = SearchTextTool(ToolContext(tmp_path), backend="ripgrep")
    for attempt in range(30):
        task = asyncio.ensure_future(tool.execute({"pattern": "needle"}))
        await asyncio.sleep(0.001 * (attempt % 10))
        task.cancel()
        try:
            await asyncio.wait_for(task, 10)  # stops a hung test: the old bug waited for ever
        except TimeoutError:
            raise AssertionError(f"cancelled search {attempt} never ended") from None
        except BaseException:  # cancelled, or the search's own error: it ended
            pass
    deadline = time.monotonic() + 5
    while _descendants_running("bwrap") and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert _descendants_running("bwrap") == []


@needs_rg
@pytest.mark.parametrize(
    "glob",
    [
        # {a,b} groups, which the Python glob used to read literally (it found nothing)
        "*.{txt,log}",
        "{x,y}.*",
        "{*.txt,dot.}",
        "x.{txt}",
        # rg's globs see no name in one that ends with '.' ("--glob '*.'" matches nothing)
        "*.",
        "dot.",
        "**/do?.",
    ],
)
async def test_backends_agree_on_search_text_globs_ripgrep_reads_its_own_way(
    tmp_path: Path, glob: str
) -> None:
    for rel in ("x.txt", "dot.", "y.csv"):
        (tmp_path / rel).write_text("needle\n")
    context = ToolContext(tmp_path)
    query = {"pattern": "needle", "glob": glob}
    rg = await SearchTextTool(context, backend="ripgrep").execute(query)
    py = await SearchTextTool(context, backend="python").execute(query)
    assert rg == py


@needs_rg
@pytest.mark.parametrize("pattern", ["**/*.{csv,json}", "data/{t,important}.csv", "{a,src}/**"])
async def test_backends_agree_on_search_files_braces(layout: Layout, pattern: str) -> None:
    rg = await files_tool(layout, "ripgrep").execute({"pattern": pattern})
    py = await files_tool(layout, "python").execute({"pattern": pattern})
    assert rg == py
    assert not py.startswith("No files match"), py


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("glob", "says"),
    [("{a,{b,c}}", "nested"), ("*.{txt", "not closed"), ("{a,b}" * 7, "more than 64")],
)
async def test_a_glob_ripgrep_cannot_read_is_an_error_for_both(
    layout: Layout, backend: str, glob: str, says: str
) -> None:
    registry = ToolRegistry()
    registry.register(text_tool(layout, backend))
    registry.register(files_tool(layout, backend))
    text = await registry.call("search_text", {"pattern": "needle", "glob": glob})
    files = await registry.call("search_files", {"pattern": glob})
    for result in (text, files):
        assert result.is_error and says in result.content, result.content


@needs_rg
async def test_a_gitignore_rule_with_braces_reads_as_in_ripgrep(tmp_path: Path) -> None:
    for rel in ("keep.txt", "drop.log", "drop.tmp", "odd{x}.md"):
        (tmp_path / rel).write_text("needle\n")
    (tmp_path / ".gitignore").write_text("*.{log,tmp}\nbad{rule\n")
    context = ToolContext(tmp_path)
    for tool_class, query in (
        (SearchFilesTool, {"pattern": "**"}),
        (SearchTextTool, {"pattern": "needle"}),
    ):
        rg = await tool_class(context, backend="ripgrep").execute(dict(query))
        py = await tool_class(context, backend="python").execute(dict(query))
        assert rg == py
        assert "drop" not in py and "keep.txt" in py and "odd{x}.md" in py


def test_the_search_child_starts_as_a_script_outside_the_package(tmp_path: Path) -> None:
    """The Python search runs ``pysearch.py`` as a script (``python -I -S``, no package around
    it) so its deadline can stop a runaway regex. When its errors moved to ``errors.py`` a
    package-relative import made the child fail at start, and the search fell back to a thread
    with no deadline (the runaway-regex test took 8.6 s against its 1 s limit)."""
    import json
    import subprocess
    import sys

    from jupyter_agent.tools.search import pysearch

    (tmp_path / "a.txt").write_text("alpha\n")
    job = {
        "workspace": str(tmp_path),
        "target": ".",
        "target_is_file": False,
        "whitelist": [],
        "parent_ignores": [],
        "hidden": [],
        "pattern": "alp",
        "flags": 0,
        "wanted": 2,
    }
    done = subprocess.run(
        [sys.executable, "-I", "-S", pysearch.__file__],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0] == "ready" and len(lines) == 2, lines
