"""The search tools: ``search_text`` (grep by regex) and ``search_files`` (find by glob).

Both run ripgrep (the ``rg`` binary of the ``ripgrep`` wheel, found next to the Python executable
or on ``PATH``) as an asyncio subprocess, and fall back to a pure-Python search that gives the same
answers when ``rg`` is missing or cannot take a pattern (``rg`` has no look-around or
back-references; the pattern is always checked with Python's ``re`` first, so an invalid regex is
the same clean error either way). The Python search runs in a child process, so that a
regex that backtracks for ever is stopped at the deadline instead of freezing the kernel.
``DEFAULT_BACKEND`` (or the ``backend=`` argument of the tool
classes) forces one of the two, which is how the tests check that they agree.

What both searches share, whichever runs:

* paths are reported relative to the workspace, in ripgrep's order (each folder's entries sorted
  by name, depth first);
* symbolic links are never followed (neither files nor folders), so a search cannot leave the
  workspace; a ``path`` argument is resolved and confined like any other path;
* ``.git`` folders are skipped; hidden files are searched; what ``.gitignore`` files ignore is
  skipped — those in the searched folder and below, and those in its parent folders up to the
  workspace root (the latter matched relative to the workspace root, as ripgrep's
  ``--ignore-file`` does); files matched by an explicit ``glob`` are searched even when ignored;
* a file with a NUL byte in what was read of it is binary and skipped;
* ``glob`` (search_text) is a ripgrep ``--glob``: ``*.py`` matches at any depth, ``src/*.py`` is
  anchored at the searched folder, and — as in ripgrep — a file or folder it names explicitly is
  searched even if ``.gitignore`` ignores it. ``pattern`` (search_files) filters the listing of
  the files ``.gitignore`` keeps, anchored at the searched folder like ``pathlib``: ``*.csv`` is
  the top level only, ``**/*.csv`` any depth.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..errors import ToolInputError
from . import pysearch
from .arguments import bool_arg, int_arg, optional_str_arg, str_arg
from .base import BuiltinTool, ToolFailure
from .context import ToolContext
from .pysearch import MAX_LINE_CHARS as MAX_LINE_CHARS  # the cut of long lines, both backends
from .pysearch import _format_hit, _Glob, _python_find, _python_grep, _Scope
from .sandbox import reader_sandbox

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
#: An unsorted (multi-threaded) rg run gives up past this many matches and a sorted run,
#: which can stop early, takes over.
UNSORTED_MATCH_BUDGET = 2000
#: A search that takes longer is stopped and what it found so far is returned.
SEARCH_TIMEOUT_S = 60.0
_GLOB_SPECIALS = re.compile(r"([*?\[\]\\!#])")


def find_ripgrep() -> str | None:
    """The ``rg`` of this Python environment (the ``ripgrep`` wheel), else one on ``PATH``."""
    name = "rg.exe" if os.name == "nt" else "rg"
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


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
    return _Scope(root, target, is_file, whitelist, parents)


def _escape_glob(text: str) -> str:
    return _GLOB_SPECIALS.sub(r"\\\1", text)


def _anchored(pattern: str, target: str) -> str:
    """``pattern`` relative to the searched folder, as a root-anchored gitignore glob."""
    prefix = "/" + _escape_glob(target) if target else ""
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
    return pattern


# -- the Python walk (shared by the fallback of both tools) ------------------------------------


# A Python regex can backtrack for ever (``(a+)+$`` on a long line of a's, or the look-arounds
# and back-references that only Python can run), and ``re`` holds the GIL while it does: in a
# thread it would freeze the event loop and the whole kernel, deadline or not. So the Python
# search runs in a child process that can be stopped at the deadline like ripgrep.
_WORKER_SCRIPT = pysearch.__file__


async def _python_grep_isolated(
    scope: _Scope, regex: re.Pattern[str], max_results: int
) -> tuple[list[str], bool]:
    """``_python_grep`` in a child process, stopped at the deadline: (found, timed_out)."""
    job = json.dumps(
        {
            "workspace": str(scope.workspace),
            "target": scope.target,
            "target_is_file": scope.target_is_file,
            "whitelist": scope.whitelist,
            "parent_ignores": [str(p) for p in scope.parent_ignores],
            "pattern": regex.pattern,
            "flags": regex.flags,
            "wanted": max_results + 1,
        }
    ).encode("utf-8", "surrogatepass")
    try:
        worker = [sys.executable, "-I", "-S", _WORKER_SCRIPT]
        visible = [sys.prefix, sys.base_prefix, os.path.dirname(_WORKER_SCRIPT)]
        process = await asyncio.create_subprocess_exec(
            *reader_sandbox(worker, scope.workspace, extra=visible),
            cwd=scope.workspace,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_rg_env(),
            limit=64 * 1024 * 1024,
        )
    except OSError:  # no usable interpreter (an embedded Python): search in a thread
        return await asyncio.to_thread(_python_grep, scope, regex, max_results), False
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    found: list[str] = []
    ready = False

    async def read() -> None:
        nonlocal ready
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(ConnectionError):
            process.stdin.write(job)
            await process.stdin.drain()
        process.stdin.close()
        while len(found) <= max_results:
            raw = await process.stdout.readline()
            if not raw:
                return
            item = json.loads(raw)
            if not ready:
                ready = item == "ready"
                continue
            found.append(item)

    timed_out = await _read_within_deadline(process, read)
    if timed_out or not process.stdout.at_eof():
        await _stop(process)
        return found, timed_out
    stderr = await process.stderr.read()
    await process.wait()
    if not ready:  # the child could not start the search: do it here after all
        return await asyncio.to_thread(_python_grep, scope, regex, max_results), False
    if process.returncode != 0:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise ToolFailure(f"search failed: {tail[0]}")
    return found, False


# -- ripgrep -----------------------------------------------------------------------------------


class _RipgrepCannot(Exception):
    """ripgrep cannot run this search (e.g. its regex engine refuses the pattern)."""


def _rg_common(scope: _Scope, *, sort: bool = True) -> list[str]:
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
    args += ["--glob", "!.git"]
    for ignore in scope.parent_ignores:
        args += ["--ignore-file", str(ignore)]
    return args


def _rg_target(scope: _Scope) -> str:
    return scope.target or "."


def _strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _rg_env() -> dict[str, str]:
    # rg needs nothing from the environment; in particular it gets no credentials.
    return {"PATH": os.environ.get("PATH", os.defpath)}


async def _spawn_rg(rg: str, argv: list[str], cwd: Path) -> asyncio.subprocess.Process:
    # In a sandbox that shows only the workspace: rg walks by path, and a folder swapped for a
    # symlink while it walks must lead nowhere (see sandbox.reader_sandbox).
    command = reader_sandbox([rg, *argv], cwd, extra=[rg])
    return await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_rg_env(),
        limit=64 * 1024 * 1024,
    )


async def _read_within_deadline(
    process: asyncio.subprocess.Process, read: Callable[[], Awaitable[None]]
) -> bool:
    """Run ``read`` (which drains ``process``'s output) for at most ``SEARCH_TIMEOUT_S``.

    Returns whether the deadline cut it short; on any other way out (an error, a cancelled
    task) ripgrep is stopped before the exception goes on.
    """
    try:
        await asyncio.wait_for(read(), SEARCH_TIMEOUT_S)
    except TimeoutError:
        return True
    except BaseException:
        await _stop(process)
        raise
    return False


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()


def _json_text(value: dict[str, Any]) -> str:
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", "replace")


class _TooManyMatches(Exception):
    """An unsorted ripgrep run found more than it is worth sorting afterwards."""


async def _ripgrep_grep(
    rg: str,
    scope: _Scope,
    pattern: str,
    case_insensitive: bool,
    max_results: int,
    *,
    sort: bool,
) -> tuple[list[str], bool]:
    """(the first max_results + 1 lines in path order, timed_out).

    ``sort=True`` has rg walk in order on one thread and stops as soon as enough is found;
    ``sort=False`` lets rg use all its threads, sorts afterwards, and raises ``_TooManyMatches``
    past a budget (a broad pattern is then better served by the sorted run, which stops early).
    """
    wanted = max_results + 1
    budget = max(UNSORTED_MATCH_BUDGET, 10 * wanted)
    argv = [
        "--json",
        *_rg_common(scope, sort=sort),
        f"--max-count={wanted}",
        *(["--ignore-case"] if case_insensitive else ["--case-sensitive"]),
        "--regexp",
        pattern,
        "--",
        _rg_target(scope),
    ]
    process = await _spawn_rg(rg, argv, scope.workspace)
    assert process.stdout is not None and process.stderr is not None
    files: list[tuple[str, list[str]]] = []  # (path, its matched lines), one entry per file
    pending: list[str] = []
    count = 0

    async def read() -> None:
        nonlocal count
        assert process.stdout is not None
        while count < (wanted if sort else budget):
            try:
                raw = await process.stdout.readline()
            except ValueError:  # one absurdly long line: stop here with what we have
                return
            if not raw:
                return
            message = json.loads(raw)
            kind = message.get("type")
            data = message.get("data", {})
            if kind == "begin":
                pending.clear()
            elif kind == "match":
                line = _json_text(data["lines"])
                if line.endswith("\n"):
                    line = line[:-1]
                path = _strip_dot(_json_text(data["path"]))
                pending.append(_format_hit(path, int(data["line_number"]), line))
            elif kind == "end":
                if pending and data.get("binary_offset") is None:
                    files.append((_strip_dot(_json_text(data["path"])), list(pending)))
                    count += len(pending)
                pending.clear()

    timed_out = await _read_within_deadline(process, read)
    if not sort and count >= budget:
        await _stop(process)
        raise _TooManyMatches
    if not sort:
        files.sort(key=lambda entry: _path_order(entry[0]))
    found = [hit for _path, hits in files for hit in hits][:wanted]
    if timed_out or not process.stdout.at_eof():
        await _stop(process)  # enough found, or gave up: rg need not finish
        return found, timed_out
    stderr = await process.stderr.read()
    await process.wait()
    if process.returncode == 2 and not found:
        message = stderr.decode("utf-8", "replace").strip()
        if "regex" in message.lower() or "literal" in message.lower():
            raise _RipgrepCannot(message)
        raise ToolFailure(f"search failed: {message or 'ripgrep error'}")
    return found, False


async def _ripgrep_find(rg: str, scope: _Scope, wanted: _Glob, cap: int) -> tuple[list[str], bool]:
    # Unsorted, so rg walks with all its threads; sorting by path components afterwards gives
    # exactly the order of --sort=path (each folder's entries by name, depth first).
    argv = ["--files", "--null", *_rg_common(scope, sort=False), "--", _rg_target(scope)]
    process = await _spawn_rg(rg, argv, scope.workspace)
    assert process.stdout is not None
    found: list[str] = []
    suffix = wanted.literal_suffix

    async def read() -> None:
        assert process.stdout is not None
        buffer = b""
        while chunk := await process.stdout.read(1 << 20):
            buffer += chunk
            *names, buffer = buffer.split(b"\0")
            for name in names:
                if not name.endswith(suffix):
                    continue
                rel = _strip_dot(name.decode("utf-8", "surrogateescape"))
                if wanted.matches(rel, False):
                    found.append(rel)

    timed_out = await _read_within_deadline(process, read)
    if timed_out:
        await _stop(process)
    else:
        await process.wait()
    found.sort(key=_path_order)
    return found[:cap], timed_out


def _path_order(rel: str) -> list[str]:
    return rel.split("/")


# -- the tools ---------------------------------------------------------------------------------


class _SearchTool(BuiltinTool):
    def __init__(self, context: ToolContext, *, backend: Backend | None = None) -> None:
        super().__init__(context)
        self.backend = backend

    def _ripgrep(self) -> str | None:
        backend = self.backend or DEFAULT_BACKEND
        if backend == "python":
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
        pattern = str_arg(args, "pattern")
        path_text = optional_str_arg(args, "path")
        glob = optional_str_arg(args, "glob")
        case_insensitive = bool_arg(args, "case_insensitive", False)
        max_results = min(
            int_arg(args, "max_results", DEFAULT_MAX_RESULTS, minimum=1), MAX_RESULTS_LIMIT
        )
        if "\x00" in pattern:
            raise ToolInputError("pattern contains a NUL byte")
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
            with contextlib.suppress(_RipgrepCannot):
                try:
                    found, timed_out = await _ripgrep_grep(
                        rg, scope, pattern, case_insensitive, max_results, sort=False
                    )
                except _TooManyMatches:
                    found, timed_out = await _ripgrep_grep(
                        rg, scope, pattern, case_insensitive, max_results, sort=True
                    )
        if found is None:
            found, timed_out = await _python_grep_isolated(scope, regex, max_results)
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
        pattern = _check_glob(str_arg(args, "pattern"), "pattern")
        path_text = optional_str_arg(args, "path")
        scope = _scope(self.context, path_text, None)
        if scope.target_is_file:
            raise ToolFailure(f"{path_text} is a file; give a folder as path")
        # The pattern filters the listing instead of going to rg as a --glob, which would
        # override .gitignore (``**`` would then list everything, ignored folders included).
        wanted = _Glob(_anchored(pattern, scope.target))
        cap = MAX_FILE_RESULTS + 1
        rg = self._ripgrep()
        timed_out = False
        if rg is not None:
            found, timed_out = await _ripgrep_find(rg, scope, wanted, cap)
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
