"""The search tools: ``search_text`` (grep by regex) and ``search_files`` (find by glob).

Both run ripgrep (``ripgrep``: the ``rg`` binary of the ``ripgrep`` wheel, found next to the
Python executable or on ``PATH``) and fall back to a pure-Python search (``pysearch``) that gives
the same answers when ``rg`` is missing or cannot take a pattern (``rg`` has no look-around or
back-references; the pattern is always checked with Python's ``re`` first, so an invalid regex is
the same clean error either way). Both run as child processes in a sandbox that shows only the
workspace (``search_child``), stopped at the deadline: a regex that backtracks for ever cannot
freeze the kernel. Where that sandbox cannot run (no bubblewrap), ``auto`` picks the Python
search: ripgrep walks by path and could be led outside by a folder swapped for a symlink
mid-walk; the Python walk opens each folder relative to its parent's descriptor, never following
a link. ``DEFAULT_BACKEND`` (or the ``backend=`` argument of the tool classes) forces
one of the two, which is how the tests check that they agree. This module holds the tools: what
a search is (its scope and globs), which backend runs it, and how its result reads.

What both searches share, whichever runs:

* paths are reported relative to the workspace, in ripgrep's order (each folder's entries sorted
  by name, depth first);
* symbolic links are never followed (neither files nor folders), so a search cannot leave the
  workspace; a ``path`` argument is resolved and confined like any other path;
* ``.git`` folders are skipped, and so are credential stores and Jupyter's folders inside the
  workspace (``hidden_paths``); hidden files are searched; what ``.gitignore`` files ignore is
  skipped — those in the searched folder and below, and those in its parent folders up to the
  workspace root (the latter matched relative to the workspace root, as ripgrep's
  ``--ignore-file`` does); files matched by an explicit ``glob`` are searched even when ignored;
* a file with a NUL byte in what was read of it is binary and skipped;
* a matched line of any length is reported, cut to ``MAX_LINE_CHARS`` characters with a count
  of the rest (ripgrep's over-long output lines are parsed as they stream, ``ripgrep_output``);
* ``glob`` (search_text) is a ripgrep ``--glob``: ``*.py`` matches at any depth, ``src/*.py`` is
  anchored at the searched folder, and — as in ripgrep — a file or folder it names explicitly is
  searched even if ``.gitignore`` ignores it. ``pattern`` (search_files) filters the listing of
  the files ``.gitignore`` keeps, anchored at the searched folder like ``pathlib``: ``*.csv`` is
  the top level only, ``**/*.csv`` any depth. In both, and in ``.gitignore`` files, ``{a,b}``
  matches either, as in ripgrep (one level; a nested or unclosed group is an error).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import stat
from pathlib import Path
from typing import Any, ClassVar, Literal

from ...errors import GlobSyntaxError, RipgrepCannot, ToolInputError, TooManyMatches
from ..arguments import bool_arg, int_arg, optional_str_arg, str_arg
from ..base import BuiltinTool, ToolFailure
from ..context import ToolContext
from ..guard.hidden_paths import hidden_within
from ..guard.sandbox import probe_off_the_loop, reader_sandbox_works
from .pysearch import MAX_LINE_CHARS as MAX_LINE_CHARS  # the cut of long lines, both backends
from .pysearch import Glob, _python_find, _Scope, escape_glob
from .ripgrep import find_ripgrep, ripgrep_find, ripgrep_grep
from .search_child import python_grep_isolated

__all__ = [
    "DEFAULT_BACKEND",
    "SearchFilesTool",
    "SearchTextTool",
    "find_ripgrep",
]

Backend = Literal["auto", "ripgrep", "python"]

#: "auto" runs ripgrep when it is found, else the Python search; tests force either.
DEFAULT_BACKEND: Backend = "auto"
DEFAULT_MAX_RESULTS = 100
MAX_RESULTS_LIMIT = 2000
MAX_FILE_RESULTS = 1000
#: A search that takes longer is stopped and what it found so far is returned.
SEARCH_TIMEOUT_S = 60.0
#: The longest regular expression search_text compiles (it is compiled on the event loop).
MAX_PATTERN_CHARS = 2_000


# -- what a search is --------------------------------------------------------------------------


def _scope(context: ToolContext, path_text: str | None, whitelist: str | None) -> _Scope:
    shown = path_text or "."
    real = context.resolve(shown)
    try:
        info = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolFailure(f"Path not found: {shown}") from None
    except OSError as exc:
        raise ToolFailure(f"Cannot search {shown}: {exc.strerror}") from None
    is_file = stat.S_ISREG(info.st_mode)
    if not is_file and not stat.S_ISDIR(info.st_mode):
        raise ToolFailure(f"{shown} is neither a file nor a folder")
    root = context.workspace
    target = "" if real == root else real.relative_to(root).as_posix()
    folder = real.parent if is_file else real
    parents: list[Path] = []
    while folder != root and root in folder.parents:
        folder = folder.parent
        candidate = folder / ".gitignore"
        if candidate.is_file():
            parents.append(candidate)
    parents.reverse()
    return _Scope(root, target, is_file, whitelist, parents, hidden_within(str(root)))


def _anchored(pattern: str, target: str) -> str:
    """``pattern`` relative to the searched folder, as a root-anchored gitignore glob."""
    prefix = "/" + escape_glob(target) if target else ""
    return f"{prefix}/{pattern.lstrip('/')}"


def _check_glob(pattern: str, what: str) -> str:
    if not pattern:
        raise ToolInputError(f"{what} is empty")
    if "\x00" in pattern:
        raise ToolInputError(f"{what} contains a NUL byte")
    if pattern.startswith("!"):
        raise ToolInputError(f"{what} cannot start with '!' (exclusions are not supported)")
    if os.path.isabs(pattern):
        raise ToolInputError(f"{what} must be relative; use the path argument to choose a folder")
    if ".." in pattern.replace("\\", "/").split("/"):
        raise ToolInputError(f"{what} may not contain '..'")
    try:
        Glob(pattern)
    except GlobSyntaxError as exc:
        raise ToolInputError(f"{what}: {exc}") from None
    return pattern


# -- the tools ---------------------------------------------------------------------------------


class _SearchTool(BuiltinTool):
    def __init__(self, context: ToolContext, *, backend: Backend | None = None) -> None:
        super().__init__(context)
        self.backend = backend

    def _ripgrep(self) -> str | None:
        backend = self.backend or DEFAULT_BACKEND
        if backend == "python":
            return None
        if backend == "auto" and not reader_sandbox_works():
            # ripgrep walks by path: only the sandbox keeps a folder swapped for a symlink
            # mid-walk from leading it outside. The Python walk holds descriptors instead.
            return None
        rg = find_ripgrep()
        if rg is None and backend == "ripgrep":
            raise ToolFailure("ripgrep (rg) is not installed")
        return rg


class SearchTextTool(_SearchTool):
    name = "search_text"
    description = (
        "Search file contents in the workspace for a regular expression (Python/ripgrep syntax). "
        "Answers one line per match, 'path:line: text', with paths relative to the workspace. "
        "Skips binary files, .git and whatever .gitignore ignores; never follows symbolic links."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {
                "type": "string",
                "description": "Folder or file to search, relative to the workspace "
                "(default: the whole workspace).",
            },
            "glob": {
                "type": "string",
                "description": "Only search files matching this glob, e.g. '*.py' (any depth) or "
                "'src/**/*.ts' (relative to path).",
            },
            "case_insensitive": {
                "type": "boolean",
                "description": "Ignore letter case (default false).",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_LIMIT,
                "description": f"Most matching lines to return (default {DEFAULT_MAX_RESULTS}).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> str:
        await probe_off_the_loop()  # before _ripgrep() asks whether the sandbox works
        pattern = str_arg(args, "pattern")
        path_text = optional_str_arg(args, "path")
        glob = optional_str_arg(args, "glob")
        case_insensitive = bool_arg(args, "case_insensitive", False)
        max_results = min(
            int_arg(args, "max_results", DEFAULT_MAX_RESULTS, minimum=1), MAX_RESULTS_LIMIT
        )
        if "\x00" in pattern:
            raise ToolInputError("pattern contains a NUL byte")
        if len(pattern) > MAX_PATTERN_CHARS:
            # compiling runs on the event loop and holds the GIL: a huge pattern (a 60,000-
            # character case-insensitive one took over 40 s) would freeze the kernel
            raise ToolInputError(
                f"the pattern is {len(pattern):,} characters long; at most {MAX_PATTERN_CHARS:,} "
                "are accepted — search for a shorter, distinctive part"
            )
        try:
            regex = re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
        except re.error as exc:
            raise ToolInputError(f"invalid regular expression {pattern!r}: {exc}") from None
        scope = _scope(self.context, path_text, None)
        if glob is not None:
            _check_glob(glob, "glob")
            inner = glob.rstrip("/")
            scope.whitelist = _anchored(glob, scope.target) if "/" in inner else glob
        found: list[str] | None = None
        timed_out = False
        rg = self._ripgrep()
        if rg is not None:
            with contextlib.suppress(RipgrepCannot):
                try:
                    found, timed_out = await ripgrep_grep(
                        rg, scope, pattern, case_insensitive, max_results,
                        sort=False, deadline_s=SEARCH_TIMEOUT_S,
                    )  # fmt: skip
                except TooManyMatches:
                    found, timed_out = await ripgrep_grep(
                        rg, scope, pattern, case_insensitive, max_results,
                        sort=True, deadline_s=SEARCH_TIMEOUT_S,
                    )  # fmt: skip
        if found is None:
            found, timed_out = await python_grep_isolated(
                scope, regex, max_results, SEARCH_TIMEOUT_S
            )
        where = f" in {path_text}" if path_text else ""
        if not found:
            return f"No matches for {pattern!r}{where}" + (
                " (search timed out)" if timed_out else ""
            )
        lines = found[:max_results]
        if len(found) > max_results:
            lines.append(
                f"[Stopped at {max_results} matches; narrow the search with path or glob, or "
                "raise max_results.]"
            )
        elif timed_out:
            lines.append(
                f"[Search stopped after {SEARCH_TIMEOUT_S:.0f} s; results may be partial.]"
            )
        return "\n".join(lines)


class SearchFilesTool(_SearchTool):
    name = "search_files"
    description = (
        "Find files in the workspace by glob pattern, relative to path: '*.csv' matches the top "
        "level only, '**/*.csv' any depth. Lists matching file paths relative to the workspace. "
        "Skips .git and whatever .gitignore ignores; never follows symbolic links."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Glob pattern, e.g. '**/*.csv' or 'data/*.json'.",
            },
            "path": {
                "type": "string",
                "description": "Folder to search under, relative to the workspace "
                "(default: the whole workspace).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def execute(self, args: dict[str, object]) -> str:
        await probe_off_the_loop()  # before _ripgrep() asks whether the sandbox works
        pattern = _check_glob(str_arg(args, "pattern"), "pattern")
        path_text = optional_str_arg(args, "path")
        scope = _scope(self.context, path_text, None)
        if scope.target_is_file:
            raise ToolFailure(f"{path_text} is a file; give a folder as path")
        # The pattern filters the listing instead of going to rg as a --glob, which would
        # override .gitignore (``**`` would then list everything, ignored folders included).
        wanted = Glob(_anchored(pattern, scope.target))
        cap = MAX_FILE_RESULTS + 1
        rg = self._ripgrep()
        timed_out = False
        if rg is not None:
            found, timed_out = await ripgrep_find(
                rg, scope, wanted, cap, deadline_s=SEARCH_TIMEOUT_S
            )
        else:
            found = await asyncio.to_thread(_python_find, scope, wanted, cap)
        where = f" in {path_text}" if path_text else ""
        if not found:
            return f"No files match {pattern!r}{where}"
        lines = found[:MAX_FILE_RESULTS]
        if len(found) > MAX_FILE_RESULTS:
            lines.append(f"[Stopped at {MAX_FILE_RESULTS} files; use a narrower pattern or path.]")
        elif timed_out:
            lines.append(
                f"[Search stopped after {SEARCH_TIMEOUT_S:.0f} s; results may be partial.]"
            )
        return "\n".join(lines)
