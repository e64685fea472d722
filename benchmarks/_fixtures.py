"""Generated fixtures for the file figures: a source-like tree, a tree of many small files, a big
text file. Everything is written into a scratch folder the figure deletes afterwards.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "value",
    "result",
    "index",
    "count",
    "total",
    "table",
    "frame",
    "series",
    "column",
    "row",
    "config",
    "parse",
    "render",
    "update",
    "client",
    "server",
    "request",
    "response",
    "buffer",
    "stream",
    "token",
    "model",
    "agent",
    "tool",
    "search",
    "files",
    "read",
    "write",
    "edit",
    "commit",
    "notebook",
    "kernel",
    "widget",
    "display",
    "output",
]


def _line_pool(rng: random.Random, size: int) -> list[str]:
    lines = []
    for _ in range(size):
        words = rng.choices(_WORDS, k=rng.randint(4, 14))
        indent = "    " * rng.randint(0, 3)
        lines.append(f"{indent}{words[0]}_{words[1]} = {' '.join(words[2:])}\n")
    return lines


@dataclass
class TextTree:
    root: Path
    files: int
    bytes: int
    #: matches of NEEDLE_PATTERN outside the ignored folder (what rg and ours should find)
    visible_matches: int
    #: matches inside the .gitignore'd folder (grep finds these too)
    ignored_matches: int


NEEDLE_PATTERN = "NEEDLE_[0-9]+"


def make_text_tree(
    root: Path, *, files: int, file_bytes: int, ignored_share: float = 0.05, needles: int = 50
) -> TextTree:
    """``files`` files of about ``file_bytes`` each in two levels of folders, a git repository
    whose ``.gitignore`` excludes ``build/`` (holding ``ignored_share`` of the files); about
    ``needles`` files, evenly spread, hold a ``NEEDLE_<n>`` line."""
    rng = random.Random(7)
    pool = _line_pool(rng, 4000)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/\n")
    ignored = int(files * ignored_share)
    total = 0
    visible = hidden = 0
    per_folder = 100
    needle_every = max(1, files // needles)
    for n in range(files):
        top = "build" if n < ignored else f"pkg{(n // (per_folder * 10)) % 1000:03d}"
        folder = root / top / f"mod{(n // per_folder) % 10}"
        if n % per_folder == 0 or n == ignored:
            folder.mkdir(parents=True, exist_ok=True)
        chunk: list[str] = []
        size = 0
        while size < file_bytes:
            line = pool[rng.randrange(len(pool))]
            chunk.append(line)
            size += len(line)
        if n % needle_every == needle_every // 2:
            chunk.insert(len(chunk) // 2, f"marker = NEEDLE_{n}  # found by the search\n")
            if n < ignored:
                hidden += 1
            else:
                visible += 1
        data = "".join(chunk)
        (folder / f"file{n:06d}.py").write_text(data)
        total += len(data)
    return TextTree(root, files, total, visible, hidden)


def make_many_files(root: Path, *, files: int, csv_every: int = 10) -> int:
    """``files`` empty files, 100 to a folder, three levels deep; every ``csv_every``-th is a
    ``.csv``. Returns how many ``.csv`` files there are."""
    root.mkdir(parents=True, exist_ok=True)
    csvs = 0
    folder = root
    for n in range(files):
        if n % 100 == 0:
            folder = root / f"a{n // 10_000:02d}" / f"b{(n // 1000) % 10}" / f"c{(n // 100) % 10}"
            folder.mkdir(parents=True, exist_ok=True)
        if n % csv_every == 0:
            name = f"data{n:06d}.csv"
            csvs += 1
        else:
            name = f"note{n:06d}.{('txt', 'py', 'json', 'md')[n % 4]}"
        (folder / name).touch()
    return csvs


def make_big_text_file(path: Path, *, total_bytes: int, tail_lines: int = 100) -> int:
    """A text file of ~``total_bytes`` in 100-byte lines, the last ``tail_lines`` numbered
    ``tail line k``. Returns the number of lines."""
    line = ("x" * 99 + "\n").encode()
    block_lines = 10_000
    block = line * block_lines
    blocks = max(1, total_bytes // len(block))
    with path.open("wb") as out:
        for _ in range(blocks):
            out.write(block)
        for k in range(tail_lines):
            out.write(f"tail line {k}\n".encode())
    return blocks * block_lines + tail_lines
