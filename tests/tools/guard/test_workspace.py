"""The workspace resolver: hostile paths refused, legal ones resolved, a property test on top."""

from __future__ import annotations

import atexit
import os
import shutil
import string
import tempfile
from pathlib import Path

import pytest
from hostile_layout import Layout, bad_text_paths, build, hostile_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_agent.errors import PathOutsideWorkspaceError, WorkspaceError
from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.guard.workspace import Workspace


def test_root_is_real_and_must_be_a_folder(layout: Layout) -> None:
    assert Workspace(layout.ws_link).root == layout.ws
    with pytest.raises(WorkspaceError):
        Workspace(layout.ws / "inside.txt")
    with pytest.raises(WorkspaceError):
        Workspace(layout.base / "missing")


@pytest.mark.parametrize("follow", [True, False])
def test_hostile_paths_are_refused(layout: Layout, follow: bool) -> None:
    ws = Workspace(layout.ws)
    for path in hostile_paths(layout):
        if not follow and path == "link_out_file":
            continue  # the link itself lies inside; see test_final_symlink_kept
        with pytest.raises(PathOutsideWorkspaceError):
            ws.resolve(path, follow_final_symlink=follow)


def test_bad_text_is_a_clean_workspace_error(layout: Layout) -> None:
    ws = Workspace(layout.ws)
    for path in bad_text_paths():
        with pytest.raises(WorkspaceError):
            ws.resolve(path)
    with pytest.raises(WorkspaceError):
        ws.resolve(b"bytes.txt")  # type: ignore[arg-type]


def test_sibling_prefix_is_not_inside(layout: Layout) -> None:
    ws = Workspace(layout.ws)
    assert not ws.contains(str(layout.evil))
    assert not ws.contains(str(layout.evil / "evil.txt"))
    assert ws.contains(str(layout.ws))
    assert ws.contains(str(layout.ws / "x"))


def test_legal_paths(layout: Layout) -> None:
    ws = Workspace(layout.ws)
    assert ws.resolve("a..b") == layout.ws / "a..b"
    assert ws.resolve("..a") == layout.ws / "..a"
    assert ws.resolve(".") == layout.ws
    assert ws.resolve("sub/../inside.txt") == layout.ws / "inside.txt"
    assert ws.resolve(str(layout.ws / "sub" / "inner.txt")) == layout.ws / "sub" / "inner.txt"
    assert ws.resolve(str(layout.ws_link / "inside.txt")) == layout.ws / "inside.txt"
    assert ws.resolve("link_in") == layout.ws / "inside.txt"
    assert ws.resolve("new/dir/file.txt") == layout.ws / "new/dir/file.txt"
    assert ws.resolve(Path("sub")) == layout.ws / "sub"
    assert ws.resolve("sub/link_up/ws/inside.txt") == layout.ws / "inside.txt"


def test_workspace_reached_through_a_symlink(layout: Layout) -> None:
    ws = Workspace(layout.ws_link)
    assert ws.resolve("inside.txt") == layout.ws / "inside.txt"
    with pytest.raises(PathOutsideWorkspaceError):
        ws.resolve("../outside/secret.txt")
    context = ToolContext(layout.ws_link)
    assert context.workspace == layout.ws
    assert context.relative(context.resolve("sub/inner.txt")) == "sub/inner.txt"
    assert context.relative(context.resolve(".")) == "."


def test_final_symlink_kept(layout: Layout) -> None:
    ws = Workspace(layout.ws)
    assert ws.resolve("link_out_file", follow_final_symlink=False) == layout.ws / "link_out_file"
    assert ws.resolve("link_in", follow_final_symlink=False) == layout.ws / "link_in"
    # a symlinked *parent* is still resolved, and refused when it points out
    with pytest.raises(PathOutsideWorkspaceError):
        ws.resolve("link_out_dir/secret.txt", follow_final_symlink=False)
    # trailing slash names the link itself here too
    assert ws.resolve("link_in/", follow_final_symlink=False) == layout.ws / "link_in"
    assert ws.resolve("sub/..", follow_final_symlink=False) == layout.ws


def test_symlink_loop_is_a_clean_error(layout: Layout) -> None:
    (layout.ws / "loop_a").symlink_to("loop_b")
    (layout.ws / "loop_b").symlink_to("loop_a")
    ws = Workspace(layout.ws)
    with pytest.raises(WorkspaceError):
        ws.resolve("loop_a/../../outside/secret.txt")
    # A loop in the last folder reaches nothing; what is returned still names a place inside.
    assert ws.resolve("loop_a/x", follow_final_symlink=False) == layout.ws / "loop_a" / "x"


def test_dangling_symlink_pointing_out_is_refused(layout: Layout) -> None:
    (layout.ws / "dangling").symlink_to("../outside/not_yet_there.txt")
    ws = Workspace(layout.ws)
    with pytest.raises(PathOutsideWorkspaceError):
        ws.resolve("dangling")
    with pytest.raises(PathOutsideWorkspaceError):
        ws.resolve("dangling/x")


# -- property test -------------------------------------------------------------------------------

# A fixed arena built once per test run: a workspace full of symlinks of every kind, and the
# places they point to. Hypothesis then generates paths *and* extra symlinks inside it.
_ARENA = Path(tempfile.mkdtemp(prefix="ws-property-"))
atexit.register(shutil.rmtree, _ARENA, True)
_ARENA_LAYOUT = build(_ARENA)
_NAMES = [
    "sub",
    "inside.txt",
    "link_out_dir",
    "link_out_file",
    "link_in",
    "link_up",
    "ws",
    "ws_evil",
    "outside",
    "dir",
    "secret.txt",
    "a..b",
    "new",
    "ws_link",
    "gen0",
    "gen1",
    "gen2",
]
_COMPONENT = st.one_of(
    st.sampled_from(_NAMES),
    st.sampled_from(["..", ".", "", "...", "..."]),
    st.text(alphabet=string.ascii_letters + ".-_ ", min_size=1, max_size=8),
)
_LINK_TARGETS = st.one_of(
    st.sampled_from(
        [
            "..",
            "../..",
            "/",
            "/etc",
            "../outside",
            "../ws_evil",
            "sub",
            ".",
            "gen1",
            "../ws_link",
            str(_ARENA / "outside"),
            str(_ARENA / "ws"),
        ]
    ),
    st.lists(_COMPONENT, min_size=1, max_size=4).map("/".join).filter(bool),
)


@st.composite
def _path_text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_COMPONENT, min_size=1, max_size=7))
    path = "/".join(parts)
    prefix = draw(
        st.sampled_from(
            [
                "",
                "",
                "/",
                str(_ARENA) + "/",
                str(_ARENA / "ws") + "/",
                str(_ARENA / "ws_link") + "/",
                "./",
            ]
        )
    )
    return prefix + path


def _ensure_link(name: str, target: str) -> None:
    link = _ARENA_LAYOUT.ws / name
    if link.is_symlink() or link.exists():
        if link.is_symlink() and os.readlink(link) == target:
            return
        if link.is_dir() and not link.is_symlink():
            return
        link.unlink()
    link.symlink_to(target)


def _is_inside(real: Path, root: Path) -> bool:
    return real == root or root in real.parents


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    path=_path_text(),
    links=st.lists(st.tuples(st.sampled_from(["gen0", "gen1", "gen2"]), _LINK_TARGETS), max_size=3),
    follow=st.booleans(),
)
def test_property_nothing_resolved_lies_outside(
    path: str, links: list[tuple[str, str]], follow: bool
) -> None:
    for name, target in links:
        _ensure_link(name, target)
    root = _ARENA_LAYOUT.ws
    ws = Workspace(root)
    try:
        resolved = ws.resolve(path, follow_final_symlink=follow)
    except WorkspaceError:
        return
    assert resolved.is_absolute()
    assert os.path.normpath(resolved) == str(resolved)
    # Lexically inside ...
    assert _is_inside(resolved, root), (path, resolved)
    # ... and what the OS would actually reach there is inside too.
    if follow:
        real = Path(os.path.realpath(resolved))
    else:
        real = Path(os.path.realpath(resolved.parent)) / resolved.name
    if os.path.normpath(real) == str(real):  # (a symlink loop reaches nothing at all)
        assert _is_inside(real, root), (path, resolved, real)
