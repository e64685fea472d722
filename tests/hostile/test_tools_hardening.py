"""Hostile-model probes of the built-in tools through the default registry (audit findings).

Each test here pins a hole found by calling the tools the way a prompt-injected model would; the
assertions are on the filesystem and on what ran, not only on the returned text.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.decorator import tool
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.registry import ToolRegistry
from jupyter_agent.tools.search import search
from jupyter_agent.tools.search.pysearch import Glob, _glob_pieces, _Nfa
from jupyter_agent.tools.search.search import SearchFilesTool, SearchTextTool


@pytest.fixture
def registry(repo: Path) -> ToolRegistry:
    registry = create_default_registry(ToolContext(repo))
    registry.enable("remove")
    return registry


def tree(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


# -- .git is code: the file tools must not write it ----------------------------------------------


async def test_file_tools_never_change_git_internals(repo: Path, registry: ToolRegistry) -> None:
    (repo / "f.txt").write_text("x\n")
    (repo / "payload").mkdir()
    (repo / "payload" / "config").write_text("[core]\n")
    (repo / "hooks_link").symlink_to(repo / ".git" / "hooks")
    (repo / "sub").mkdir()
    before = tree(repo / ".git")
    config = (repo / ".git" / "config").read_text()
    attempts = [
        ("write_file", {"file_path": ".git/config", "content": config + "[core]\n\tx = 1\n"}),
        ("write_file", {"file_path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ("write_file", {"file_path": "hooks_link/pre-commit", "content": "#!/bin/sh\n"}),
        ("write_file", {"file_path": ".GIT/config", "content": "x"}),
        ("write_file", {"file_path": ".git./config", "content": "x"}),
        ("write_file", {"file_path": "sub/.git/config", "content": "x"}),
        ("write_file", {"file_path": "sub/.git", "content": "gitdir: ../.git\n"}),
        ("edit_file", {"file_path": ".git/config", "old_string": "[core]", "new_string": "[x]"}),
        ("mkdir", {"path": ".git/hooks/more"}),
        ("mkdir", {"path": "sub/.git"}),
        ("move", {"source": "payload", "destination": "sub/.git"}),
        ("move", {"source": "f.txt", "destination": ".git/hooks/pre-commit"}),
        ("move", {"source": "f.txt", "destination": ".git/hooks"}),
        ("move", {"source": ".git/hooks/pre-commit.sample", "destination": "x"}),
        ("move", {"source": ".git", "destination": "old_git"}),
        ("remove", {"path": ".git", "recursive": True}),
        ("remove", {"path": ".git/config"}),
    ]
    for name, args in attempts:
        result = await registry.call(name, args)
        assert result.is_error, (name, args, result.content)
        assert ".git" in result.content and "git_commit" in result.content, result.content
    assert tree(repo / ".git") == before
    assert not (repo / "sub" / ".git").exists()
    assert (repo / "payload" / "config").exists() and (repo / "f.txt").exists()
    # Reading and searching .git stays allowed, as does a name that merely contains "git".
    for name, args in [
        ("read_file", {"file_path": ".git/HEAD"}),
        ("write_file", {"file_path": ".gitignore", "content": ""}),
        ("write_file", {"file_path": "my.git/x", "content": ""}),
    ]:
        assert not (await registry.call(name, args)).is_error, (name, args)


async def test_a_planted_git_setting_cannot_run_through_git_commit(
    repo: Path, registry: ToolRegistry, tmp_path: Path
) -> None:
    """The exploit itself: core.fsmonitor runs a command on ``git add`` (run_bash is off)."""
    marker = tmp_path / "PWNED"
    config = (repo / ".git" / "config").read_text()
    evil = config + f'[core]\n\tfsmonitor = "touch {marker}; false"\n'
    assert not registry.is_tool_enabled("run_bash")
    planted = await registry.call("write_file", {"file_path": ".git/config", "content": evil})
    assert planted.is_error
    (repo / "a.txt").write_text("a\n")
    result = await registry.call("git_commit", {"message": "m"})
    assert not result.is_error, result.content
    assert not marker.exists()


# -- a regex that backtracks for ever must not freeze the kernel ---------------------------------


@pytest.mark.parametrize("backend", ["python", "auto"])
async def test_runaway_regex_is_stopped_at_the_deadline_and_the_loop_stays_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """``re`` holds the GIL while it backtracks: run in a thread, it froze the event loop."""
    (tmp_path / "evil.txt").write_text("a" * 27 + "!\n")  # ~8 s of backtracking in re
    (tmp_path / "fine.txt").write_text("aaa\n")
    monkeypatch.setattr(search, "SEARCH_TIMEOUT_S", 1.0)
    tool = SearchTextTool(ToolContext(tmp_path), backend=backend)  # type: ignore[arg-type]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    # The back-reference keeps ripgrep out: even "auto" must use Python's re for this one.
    # (The match never ends: only the search's own timeout ends the call; 30 s stops a hang.)
    out = await asyncio.wait_for(tool.execute({"pattern": r"^(a+)+(\1)?$"}), 30)
    ticking.cancel()
    assert ticks >= 10  # the event loop kept running meanwhile
    assert "timed out" in out
    # and an ordinary Python-only pattern still answers normally
    assert await tool.execute({"pattern": r"(a)\1\1$"}) == "fine.txt:1: aaa"


# -- a glob with many stars must not backtrack for ever ------------------------------------------


@pytest.mark.parametrize("backend", ["ripgrep", "python"])
async def test_glob_with_many_stars_matches_the_names_it_should(
    tmp_path: Path, backend: str
) -> None:
    """``*a*a*a*a*a*b`` as a backtracking regex ran for minutes on a 200-character name (the
    time these calls take is a goal of benchmark figure 24)."""
    name = "a" * 200
    (tmp_path / name).write_text("needle\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ("a" * 150 + "b")).write_text("needle\n")
    context = ToolContext(tmp_path)
    files = SearchFilesTool(context, backend=backend)  # type: ignore[arg-type]
    text = SearchTextTool(context, backend=backend)  # type: ignore[arg-type]
    assert await files.execute({"pattern": "*a" * 8 + "*b"}) == "No files match " + repr(
        "*a" * 8 + "*b"
    )
    assert await files.execute({"pattern": "**/" + "*a" * 8 + "*b"}) == f"sub/{'a' * 150}b"
    assert await files.execute({"pattern": "*a" * 8}) == name
    assert await text.execute({"pattern": "needle", "glob": "*a" * 8 + "*b"}) == (
        f"sub/{'a' * 150}b:1: needle"
    )


_GLOB_PARTS = st.sampled_from(["a", "b", ".", "*", "**", "?", "[ab]", "[!a]", "\\*", "/", "**/"])


@settings(max_examples=300, deadline=None)
@given(
    glob=st.lists(_GLOB_PARTS, min_size=1, max_size=8).map("".join),
    paths=st.lists(
        st.lists(st.text("ab.*", min_size=1, max_size=4), min_size=1, max_size=4).map("/".join),
        min_size=1,
        max_size=6,
    ),
)
def test_linear_glob_matcher_agrees_with_the_regex(glob: str, paths: list[str]) -> None:
    glob = glob.strip("/") or "a"
    anchored = glob if "/" in glob or glob == "**" else "**/" + glob
    try:
        regex = re.compile("".join(_glob_pieces(anchored)), re.DOTALL)
    except re.error:
        return
    nfa = _Nfa(_glob_pieces(anchored))
    for path in paths:
        assert nfa.fullmatch(path) == (regex.fullmatch(path) is not None), (glob, path)
        assert Glob(glob).matches(path, False) == nfa.fullmatch(path), (glob, path)


# -- odd arguments and odd paths: always a clear error result, never an exception ----------------


async def test_sys_exit_in_a_user_tool_is_an_error_result(tmp_path: Path) -> None:
    @tool
    def quitter() -> str:
        """Calls sys.exit."""
        raise SystemExit(3)

    registry = ToolRegistry()
    registry.register(quitter)
    result = await registry.call("quitter", {})
    assert result.is_error
    assert result.content == "Error executing quitter: the tool called sys.exit(3)"


async def test_trailing_slash_on_a_file_path(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "d").mkdir()
    registry = create_default_registry(ToolContext(tmp_path))
    for name, args in [
        ("write_file", {"file_path": "newdir/", "content": "x"}),
        ("read_file", {"file_path": "a.txt/"}),
        ("edit_file", {"file_path": "a.txt/", "old_string": "a", "new_string": "b"}),
        ("write_file", {"file_path": "d/", "content": "x"}),
    ]:
        result = await registry.call(name, args)
        assert result.is_error and result.content.startswith(f"Error executing {name}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "d"]
    assert (tmp_path / "a.txt").read_text() == "a\n"
    assert list((tmp_path / "d").iterdir()) == []


async def test_non_text_encodings_are_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    registry = create_default_registry(ToolContext(tmp_path))
    for encoding in ("rot13", "base64", "zlib", "no-such-codec"):
        result = await registry.call("read_file", {"file_path": "a.txt", "encoding": encoding})
        assert result.is_error and encoding in result.content, result.content
        assert "codecs.decode" not in result.content


async def test_crlf_and_missing_final_newline_survive_read_and_edit(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\nthree")
    registry = create_default_registry(ToolContext(tmp_path))
    assert await registry.execute("read_file", {"file_path": "w.txt"}) == "one\r\ntwo\r\nthree"
    out = await registry.execute("read_file", {"file_path": "w.txt", "offset": 2})
    assert out == "two\r\nthree"
    edited = await registry.call(
        "edit_file", {"file_path": "w.txt", "old_string": "two\r\nthree", "new_string": "2\r\n3"}
    )
    assert not edited.is_error, edited.content
    assert (tmp_path / "w.txt").read_bytes() == b"one\r\n2\r\n3"


async def test_special_files_never_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "pipe_link").symlink_to("pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "environ").symlink_to("/proc/self/environ")
    (tmp_path / "a.txt").write_text("needle\n")
    registry = create_default_registry(ToolContext(tmp_path))
    for name, args in [
        ("read_file", {"file_path": "pipe"}),
        ("read_file", {"file_path": "pipe_link"}),
        ("read_file", {"file_path": "zero"}),
        ("read_file", {"file_path": "environ"}),
        ("edit_file", {"file_path": "pipe", "old_string": "a", "new_string": "b"}),
        ("search_text", {"pattern": "needle", "path": "pipe"}),
        ("list_dir", {"path": "pipe"}),
    ]:
        result = await asyncio.wait_for(registry.call(name, args), 5)
        assert result.is_error, (name, args, result.content)
    for backend in ("python", "ripgrep"):
        searched = SearchTextTool(ToolContext(tmp_path), backend=backend)  # type: ignore[arg-type]
        assert await asyncio.wait_for(searched.execute({"pattern": "needle"}), 5) == (
            "a.txt:1: needle"
        )
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)


_ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.sampled_from(
        [
            "",
            ".",
            "/",
            "..",
            "-rf",
            "--help",
            "a\nb",
            "\x00",
            "x" * 5000,
            ".git/config",
            "a.txt/",
            "pipe",
            "é/ü.txt",
            "\ud800",
            "*",
            "[",
            "(?=",
            "\\",
        ]
    ),
    st.text(max_size=20),
    st.lists(st.sampled_from(["a.txt", "-rf", "..", ""]), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)

_FUZZED_TOOLS = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "mkdir",
    "move",
    "remove",
    "search_text",
    "search_files",
    "save_session_context",
    "git_commit",
]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(_FUZZED_TOOLS),
    values=st.lists(_ODD_VALUES, min_size=0, max_size=5),
    extra=st.booleans(),
)
def test_odd_arguments_never_escape_the_registry(
    tmp_path_factory: pytest.TempPathFactory, name: str, values: list[object], extra: bool
) -> None:
    base = tmp_path_factory.mktemp("fuzz")
    ws = base / "ws"
    ws.mkdir()
    outside = base / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (ws / "a.txt").write_text("a\n")
    os.mkfifo(ws / "pipe")
    registry = create_default_registry(ToolContext(ws))
    registry.enable("remove")
    tool_obj = registry.get_tool(name)
    assert tool_obj is not None
    keys = list(tool_obj.get_schema()["input_schema"]["properties"])
    args: dict[str, object] = dict(zip(keys, values, strict=False))
    if extra:
        args["unexpected"] = 1

    async def run() -> None:
        result = await asyncio.wait_for(registry.call(name, args), 20)
        assert isinstance(result.content, str)
        if result.is_error:
            assert result.content.startswith("Error"), result.content
            assert "Traceback" not in result.content

    asyncio.run(run())
    assert sorted(p.name for p in base.iterdir()) == ["outside", "ws"]
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]
    assert ws.exists() and stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)
