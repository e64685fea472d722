"""The ripgrep backend of ``search_text`` and ``search_files``.

ripgrep (the ``rg`` binary of the ``ripgrep`` wheel, found next to the Python executable or on
``PATH``) walks and greps far faster than Python. It runs in the reader sandbox
(``search_child``) with the options that make it walk as the Python search does (see
``search``): hidden files searched, symlinks never followed, ``.git`` skipped, only the
``.gitignore`` files of the workspace read. Its ``--json`` output is read with
``ripgrep_output``, so a matched line of any length is reported.
"""

from __future__ import annotations

import os
import shutil
import sys

from ...errors import RipgrepCannot, TooManyMatches
from ..base import ToolFailure
from ..guard.sandbox import end_reader
from .pysearch import Glob, _format_hit, _format_long_hit, _Scope, escape_glob
from .ripgrep_output import LongMatch, RipgrepOutput, json_text
from .search_child import read_within_deadline, spawn_reader

__all__ = [
    "UNSORTED_MATCH_BUDGET",
    "RipgrepCannot",
    "TooManyMatches",
    "find_ripgrep",
    "ripgrep_find",
    "ripgrep_grep",
]

#: An unsorted (multi-threaded) rg run gives up past this many matches and a sorted run,
#: which can stop early, takes over.
UNSORTED_MATCH_BUDGET = 2000
#: rg's output is read in pieces of this many bytes.
_READ_BYTES = 1 << 20


def find_ripgrep() -> str | None:
    """The ``rg`` of this Python environment (the ``ripgrep`` wheel), else one on ``PATH``."""
    name = "rg.exe" if os.name == "nt" else "rg"
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


def _common_options(scope: _Scope, *, sort: bool = True) -> list[str]:
    args = [
        "--no-config",
        *(["--sort=path"] if sort else []),
        "--hidden",
        "--no-follow",
        "--no-require-git",
        "--no-ignore-parent",
        "--no-ignore-dot",
        "--no-ignore-global",
        "--no-ignore-exclude",
        "--no-messages",
    ]
    if scope.whitelist:
        args += ["--glob", scope.whitelist]
    args += ["--glob", "!.git", "--glob", "!.jupyter_agent"]  # the agent's records: runs_later
    for hidden in scope.hidden:  # after the whitelist: the later glob wins
        args += ["--glob", "!/" + escape_glob(hidden)]
    for ignore in scope.parent_ignores:
        args += ["--ignore-file", str(ignore)]
    return args


def _name_filter(suffix: bytes) -> list[str]:
    """rg options that list only files whose name ends with the last part of ``suffix``.

    Most of a big tree cannot match a glob such as ``**/*.csv``; having ripgrep drop those names
    saves writing, reading and decoding every one of them. A file type (``--type-add``) is used,
    not ``--glob``: a ``--glob`` that matches overrides ``.gitignore``, a type is applied after
    it. The type matches the file name only, so it is a superset of what the glob takes; every
    name rg lists is still matched against the whole glob.
    """
    # rg reads a definition as "name:glob" or "name:include:types": a second colon in the glob
    # makes it refuse the whole run, so only what follows the ending's last colon is given
    ending = suffix.rsplit(b"/", 1)[-1].rsplit(b":", 1)[-1]
    if not ending or ending.endswith(b"."):
        # rg's file types see no name in one that ends with "." (Rust's file_name): with a type
        # given, it would leave out every such file, the ones the glob matches included
        return []
    try:
        text = ending.decode("utf-8")
    except UnicodeDecodeError:  # the ending starts inside a character: rg could not take it
        return []
    return ["--type-add", f"jupyteragentname:*{escape_glob(text)}", "--type", "jupyteragentname"]


def _target(scope: _Scope) -> str:
    return scope.target or "."


def _strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def path_order(rel: str) -> list[str]:
    """The sort key of ``--sort=path``: each folder's entries by name, depth first."""
    return rel.split("/")


async def ripgrep_grep(
    rg: str,
    scope: _Scope,
    pattern: str,
    case_insensitive: bool,
    max_results: int,
    *,
    sort: bool,
    deadline_s: float,
) -> tuple[list[str], bool]:
    """(the first max_results + 1 lines in path order, timed_out).

    ``sort=True`` has rg walk in order on one thread and stops as soon as enough is found;
    ``sort=False`` lets rg use all its threads, sorts afterwards, and raises ``TooManyMatches``
    past a budget (a broad pattern is then better served by the sorted run, which stops early).
    """
    if scope.whitelist and Glob(scope.whitelist).literal_suffix.endswith(b"."):
        # rg's globs see no name in one that ends with ".": "--glob '*.'" matches nothing
        raise RipgrepCannot(f"ripgrep cannot match the glob {scope.whitelist!r}")
    wanted = max_results + 1
    budget = max(UNSORTED_MATCH_BUDGET, 10 * wanted)
    argv = [
        "--json",
        *_common_options(scope, sort=sort),
        f"--max-count={wanted}",
        *(["--ignore-case"] if case_insensitive else ["--case-sensitive"]),
        "--regexp",
        pattern,
        "--",
        _target(scope),
    ]
    process = await spawn_reader([rg, *argv], scope.workspace, extra=[rg])
    assert process.stdout is not None and process.stderr is not None
    files: list[tuple[str, list[str]]] = []  # (path, its matched lines), one entry per file
    pending: list[str] = []
    count = 0
    output = RipgrepOutput()

    def take(message: dict[str, object] | LongMatch) -> None:
        nonlocal count
        if isinstance(message, LongMatch):
            path = _strip_dot(message.path)
            pending.append(
                _format_long_hit(path, message.line_number, message.head, message.length)
            )
            return
        kind = message.get("type")
        data = message.get("data", {})
        assert isinstance(data, dict)
        if kind == "begin":
            pending.clear()
        elif kind == "match":
            line = json_text(data["lines"])
            if line.endswith("\n"):
                line = line[:-1]
            path = _strip_dot(json_text(data["path"]))
            pending.append(_format_hit(path, int(data["line_number"]), line))
        elif kind == "end":
            if pending and data.get("binary_offset") is None:
                files.append((_strip_dot(json_text(data["path"])), list(pending)))
                count += len(pending)
            pending.clear()

    async def read() -> None:
        assert process.stdout is not None
        while count < (wanted if sort else budget):
            chunk = await process.stdout.read(_READ_BYTES)
            for message in output.feed(chunk) if chunk else output.close():
                take(message)
                if count >= (wanted if sort else budget):
                    return
            if not chunk:
                return

    timed_out = await read_within_deadline(process, read, deadline_s)
    if not sort and count >= budget:
        await end_reader(process)
        raise TooManyMatches
    if not sort:
        files.sort(key=lambda entry: path_order(entry[0]))
    found = [hit for _path, hits in files for hit in hits][:wanted]
    if timed_out or not process.stdout.at_eof():
        await end_reader(process)  # enough found, or gave up: rg need not finish
        return found, timed_out
    stderr = await process.stderr.read()
    await process.wait()
    if process.returncode == 2 and not found:
        message = stderr.decode("utf-8", "replace").strip()
        if "regex" in message.lower() or "literal" in message.lower():
            raise RipgrepCannot(message)
        raise ToolFailure(f"search failed: {message or 'ripgrep error'}")
    return found, False


async def ripgrep_find(
    rg: str, scope: _Scope, wanted: Glob, cap: int, *, deadline_s: float
) -> tuple[list[str], bool]:
    """The files ``wanted`` matches, in path order, at most ``cap``: (found, timed_out)."""
    # Unsorted, so rg walks with all its threads; sorting by path components afterwards gives
    # exactly the order of --sort=path (each folder's entries by name, depth first). rg lists
    # only names ending like the glob (_name_filter); the glob itself is matched here.
    suffix = wanted.literal_suffix
    argv = [
        "--files",
        "--null",
        *_common_options(scope, sort=False),
        *_name_filter(suffix),
        "--",
        _target(scope),
    ]
    process = await spawn_reader([rg, *argv], scope.workspace, extra=[rg])
    assert process.stdout is not None
    found: list[str] = []

    async def read() -> None:
        assert process.stdout is not None
        buffer = b""
        while chunk := await process.stdout.read(_READ_BYTES):
            buffer += chunk
            *names, buffer = buffer.split(b"\0")
            for name in names:
                if not name.endswith(suffix):
                    continue
                rel = _strip_dot(name.decode("utf-8", "surrogateescape"))
                if wanted.matches(rel, False):
                    found.append(rel)

    timed_out = await read_within_deadline(process, read, deadline_s)
    if timed_out:
        await end_reader(process)
    else:
        await process.wait()
    found.sort(key=path_order)
    return found[:cap], timed_out
