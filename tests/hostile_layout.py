"""A workspace surrounded by things a tool must never touch, and a way to prove it didn't.

tmp/
  ws/                       the workspace
    inside.txt, sub/inner.txt, a..b
    link_out_file -> ../outside/secret.txt
    link_out_dir  -> ../outside
    link_in       -> inside.txt
    sub/link_up   -> ../..          (a parent link pointing out)
  ws_evil/evil.txt          a sibling whose name starts with the workspace's
  outside/secret.txt, outside/dir/deep.txt
  ws_link -> ws             the workspace reached through a symlink
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SECRET = "top secret\n"


@dataclass
class Layout:
    base: Path
    ws: Path
    outside: Path
    evil: Path
    ws_link: Path

    def snapshot_outside(self) -> dict[str, tuple[object, ...]]:
        """Everything outside the workspace: type, content or link target, mode, mtime."""
        return snapshot(self.base, skip=self.ws)


def snapshot(top: Path, skip: Path | None = None) -> dict[str, tuple[object, ...]]:
    state: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        if skip is not None and here == skip:
            dirnames[:] = []
            continue
        for name in sorted(dirnames + filenames):
            path = here / name
            if skip is not None and path == skip:
                continue
            info = path.lstat()
            if path.is_symlink():
                state[str(path)] = ("link", os.readlink(path), info.st_mtime_ns)
            elif path.is_dir():
                state[str(path)] = ("dir", info.st_mode, info.st_mtime_ns)
            else:
                state[str(path)] = ("file", path.read_bytes(), info.st_mode, info.st_mtime_ns)
    return state


def build(base: Path) -> Layout:
    ws = base / "ws"
    outside = base / "outside"
    evil = base / "ws_evil"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    (outside / "dir" / "deep.txt").write_text(SECRET)
    evil.mkdir()
    (evil / "evil.txt").write_text(SECRET)
    (ws / "sub").mkdir(parents=True)
    (ws / "inside.txt").write_text("inside\n")
    (ws / "sub" / "inner.txt").write_text("inner\n")
    (ws / "a..b").write_text("legal name\n")
    (ws / "link_out_file").symlink_to("../outside/secret.txt")
    (ws / "link_out_dir").symlink_to("../outside")
    (ws / "link_in").symlink_to("inside.txt")
    (ws / "sub" / "link_up").symlink_to("../..")
    ws_link = base / "ws_link"
    ws_link.symlink_to("ws")
    return Layout(base, ws, outside, evil, ws_link)


def hostile_paths(layout: Layout) -> list[str]:
    """Paths that every path-taking tool must refuse."""
    return [
        "..",
        "../outside/secret.txt",
        "../../etc/passwd",
        "sub/../../outside/secret.txt",
        str(layout.outside / "secret.txt"),
        str(layout.outside),
        "/etc/passwd",
        "../ws_evil/evil.txt",
        str(layout.evil / "evil.txt"),
        str(layout.evil),
        "link_out_file",
        "link_out_dir/secret.txt",
        "link_out_dir/dir",
        "link_out_dir/new.txt",
        "sub/link_up/outside/secret.txt",
        "sub/link_up/ws_evil",
        "link_out_dir/dir/../secret.txt",
    ]


def bad_text_paths() -> list[str]:
    return ["bad\x00name.txt", "x" * 300, "/".join(["d"] * 2100), ""]
