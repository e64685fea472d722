"""The pure-Python search behind ``search_text`` and ``search_files`` when ripgrep cannot run.

It walks the workspace the way ripgrep does (``.gitignore`` rules, ``.git`` skipped, symlinks never
followed) and greps with Python's ``re``. It walks by descriptors — each folder opened by name
relative to the one above, no symlink followed, files opened non-blocking and checked to be
regular — so a folder swapped for a symlink mid-walk, or a FIFO swapped in, ends that branch
instead of leading outside the workspace or blocking (without the reader sandbox too). It imports
only the standard library and nothing of this package, so that it can also run as a script —
``python -I -S pysearch.py`` with a JSON job on stdin — which is how ``search_text`` runs it: in a
child process that the deadline can stop, since a regex that backtracks for ever holds the GIL
and would freeze the kernel if run in a thread.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

if __package__:
    from ...errors import GlobSyntaxError
    from ..cut_mark import cut_mark
else:  # the search child runs this file as a script (``python -I -S pysearch.py``, in the
    # sandbox that shows it only this folder): no package around it, so ValueError, its base
    GlobSyntaxError = ValueError  # type: ignore[misc, assignment]
    # and the one cut mark from its standard-library module in the folder above (``-I`` keeps
    # it off ``sys.path``, so it is loaded by its path; the sandbox shows that one file)
    import importlib.util

    _beside = Path(__file__).parent.parent / "cut_mark.py"
    _spec = importlib.util.spec_from_file_location("cut_mark", _beside)
    assert _spec is not None and _spec.loader is not None
    _cut_mark_module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_cut_mark_module)
    cut_mark = _cut_mark_module.cut_mark

#: Matched lines longer than this are shortened in the output.
MAX_LINE_CHARS = 500


class _Scope:
    """Where a search runs and what it skips, in terms both backends understand.

    (A plain class, not a dataclass: importing ``dataclasses`` would slow the worker's start.)
    """

    __slots__ = ("hidden", "parent_ignores", "target", "target_is_file", "whitelist", "workspace")

    def __init__(
        self,
        workspace: Path,
        target: str,
        target_is_file: bool,
        whitelist: str | None,
        parent_ignores: list[Path] | None = None,
        hidden: list[str] | None = None,
    ) -> None:
        self.workspace = workspace
        #: the searched folder or file, relative to the workspace ("" for the root)
        self.target = target
        self.target_is_file = target_is_file
        #: an override glob (gitignore syntax, relative to the workspace root) files must match
        self.whitelist = whitelist
        #: .gitignore files of the folders above the target, up to the root
        self.parent_ignores: list[Path] = parent_ignores if parent_ignores is not None else []
        #: credential stores and Jupyter's folders inside the workspace (relative to it): never
        #: walked into (``hidden_paths``)
        self.hidden: list[str] = hidden if hidden is not None else []


#: Characters with a meaning in ripgrep's globs (``#`` at the start of an ignore rule).
_GLOB_SPECIALS = re.compile(r"([*?\[\]\\!#{},])")


def escape_glob(text: str) -> str:
    """``text`` as a glob that matches exactly it (each special character escaped)."""
    return _GLOB_SPECIALS.sub(r"\\\1", text)


#: The most globs one glob's ``{a,b}`` groups may stand for (``{a,b}{c,d}`` stands for four).
MAX_GLOB_ALTERNATIVES = 64


class Glob:
    """One glob in ``.gitignore`` syntax, as ripgrep reads them (``--glob`` and ignore files).

    A glob without a slash matches a name at any depth, one with a slash is anchored; a trailing
    slash matches folders only. A path matches by itself only: unlike ``git check-ignore``, the
    rule ``build`` does not match ``build/x`` — ripgrep never looks inside an ignored folder it
    walks, and searches one you name explicitly. (This is also why pathspec, whose matching
    includes a folder's contents, is not used here: the two backends must agree exactly.)
    ``{a,b}`` matches either, as in ripgrep: one level (nested groups are refused, as ripgrep
    refuses them), at most ``MAX_GLOB_ALTERNATIVES`` globs in all.
    """

    __slots__ = ("_alternatives", "dir_only", "literal_suffix")

    def __init__(self, glob: str) -> None:
        glob = _byte_text(glob)
        self.dir_only = glob.endswith("/")
        glob = glob.rstrip("/")
        anchored = glob.startswith("/")
        glob = glob.lstrip("/")
        if not anchored and "/" not in glob and glob != "**":
            glob = "**/" + glob
        self._alternatives: list[tuple[re.Pattern[str], _Nfa | None, int]] = []
        suffixes: list[str] = []
        for alternative in _expand_braces(glob):
            pieces = _glob_pieces(alternative)
            # A backtracking regex with k unbounded repeats costs up to n**k steps: "*a*a*a*a*b"
            # against a 200-character name ran for minutes. Such globs (and long paths with
            # three repeats) are matched in linear time instead; the regex is faster on everyday
            # globs.
            repeats = sum(piece in _REPEATS for piece in pieces)
            nfa = _Nfa(pieces) if repeats > 2 else None
            up_to = _ANY_LENGTH if repeats <= 2 else (1024 if repeats == 3 else 0)
            self._alternatives.append((re.compile("".join(pieces), re.DOTALL), nfa, up_to))
            suffixes.append(_literal_suffix(pieces))
        #: The UTF-8 bytes every matching path ends with (b".csv" for "**/*.csv"): a cheap test
        #: that rules out most names of a big listing before the regex runs.
        self.literal_suffix = _common_suffix(suffixes).encode("latin-1")

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        rel = _byte_text(rel)
        for regex, nfa, up_to in self._alternatives:
            if nfa is not None and len(rel) > up_to:
                if nfa.fullmatch(rel):
                    return True
            elif regex.fullmatch(rel) is not None:
                return True
        return False


def _common_suffix(texts: list[str]) -> str:
    shortest = min(texts, key=len)
    size = len(shortest)
    while size and not all(text.endswith(shortest[len(shortest) - size :]) for text in texts):
        size -= 1
    return shortest[len(shortest) - size :] if size else ""


def _expand_braces(glob: str) -> list[str]:
    """The globs ``glob``'s ``{a,b}`` groups stand for; escapes and ``[...]`` classes are kept
    as they are (a brace in them is literal). Raises ``GlobSyntaxError`` as ripgrep would."""
    out = [""]
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "\\" and i + 1 < len(glob):
            piece, i = glob[i : i + 2], i + 2
        elif char == "[" and (end := glob.find("]", i + 2)) >= 0:
            piece, i = glob[i : end + 1], end + 1
        elif char == "{":
            alternatives, i = _brace_group(glob, i + 1)
            out = [start + alternative for start in out for alternative in alternatives]
            if len(out) > MAX_GLOB_ALTERNATIVES:
                raise GlobSyntaxError(
                    f"its {{...}} groups stand for more than {MAX_GLOB_ALTERNATIVES} globs"
                )
            continue
        else:
            piece, i = char, i + 1
        out = [start + piece for start in out]
    return out


def _brace_group(glob: str, i: int) -> tuple[list[str], int]:
    """The alternatives of the group that starts at ``glob[i]`` (after its ``{``), and the index
    after its ``}``."""
    alternatives: list[str] = []
    current = ""
    while i < len(glob):
        char = glob[i]
        if char == "\\" and i + 1 < len(glob):
            current, i = current + glob[i : i + 2], i + 2
        elif char == "[" and (end := glob.find("]", i + 2)) >= 0:
            current, i = current + glob[i : end + 1], end + 1
        elif char == "{":
            raise GlobSyntaxError("nested {...} groups are not allowed")
        elif char == ",":
            alternatives.append(current)
            current, i = "", i + 1
        elif char == "}":
            alternatives.append(current)
            return alternatives, i + 1
        else:
            current, i = current + char, i + 1
    raise GlobSyntaxError("a '{' group is not closed (a literal '{' is written '[{]' or '\\{')")


_ANY_LENGTH = 1 << 62


def _byte_text(text: str) -> str:
    """``text`` with one character per UTF-8 byte, the unit ripgrep's globs match.

    ripgrep matches globs against a path's bytes: ``?`` is one byte, so ``?.txt`` does not match
    ``é.txt`` but ``??.txt`` does. Globs and paths both go through this before matching, so the
    Python walk agrees with ripgrep on non-ASCII names.
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


#: The pieces of a glob's regex that repeat without bound.
_REPEATS = frozenset({"(?:.*/)?", ".*", ".+", "[^/]*"})


class _Nfa:
    """A glob's regex pieces (``_glob_pieces``), matched without backtracking (states in step).

    Each step is a single character (a predicate), a repeat of a predicate (zero or more), or
    the entry of ``(?:.*/)?``, which may jump over the "any run, then a slash" that follows it.
    Time is O(len(text) * steps).
    """

    __slots__ = ("_steps",)

    def __init__(self, pieces: list[str]) -> None:
        # (predicate or None for the optional group's entry, repeat)
        self._steps: list[tuple[re.Pattern[str] | None, bool]] = []
        any_char = re.compile(".", re.DOTALL)
        for piece in pieces:
            if piece == "(?:.*/)?":
                self._steps += [(None, False), (any_char, True), (re.compile("/"), False)]
            elif piece == ".*":
                self._steps.append((any_char, True))
            elif piece == ".+":
                self._steps += [(any_char, False), (any_char, True)]
            elif piece == "[^/]*":
                self._steps.append((re.compile("[^/]"), True))
            else:
                self._steps.append((re.compile(piece, re.DOTALL), False))

    def _closure(self, states: set[int]) -> set[int]:
        todo = list(states)
        while todo:
            index = todo.pop()
            if index >= len(self._steps):
                continue
            predicate, repeat = self._steps[index]
            if predicate is None:
                follows: tuple[int, ...] = (index + 1, index + 3)
            elif repeat:
                follows = (index + 1,)
            else:
                continue
            for follow in follows:
                if follow not in states:
                    states.add(follow)
                    todo.append(follow)
        return states

    def fullmatch(self, text: str) -> bool:
        steps = self._steps
        states = self._closure({0})
        for char in text:
            following = set()
            for index in states:
                if index < len(steps):
                    predicate, repeat = steps[index]
                    if predicate is not None and predicate.fullmatch(char):
                        following.add(index if repeat else index + 1)
            if not following:
                return False
            states = self._closure(following)
        return len(steps) in states


class _IgnoreFile:
    """The rules of one ``.gitignore``; the last rule that matches decides."""

    def __init__(self, text: str) -> None:
        self.rules: list[tuple[Glob, bool]] = []
        for raw in text.splitlines():
            line = raw if raw.endswith("\\ ") else raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated or line.startswith(("\\!", "\\#")):
                line = line[1:]
            if line and line != "/":
                try:
                    self.rules.append((Glob(line), negated))
                except GlobSyntaxError:  # ripgrep skips a rule it cannot read, and so do we
                    continue

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a ``!`` rule; None: no rule matches."""
        for glob, negated in reversed(self.rules):
            if glob.matches(rel, is_dir):
                return not negated
        return None


class _IgnoreRules:
    """Which entries a walk skips: ``.git``, the ``--glob`` whitelist, ``.gitignore`` files."""

    def __init__(self, scope: _Scope) -> None:
        self._parents = [f for f in (_load_ignore(p) for p in scope.parent_ignores) if f]
        self._whitelist = Glob(scope.whitelist) if scope.whitelist else None
        self._hidden = frozenset(scope.hidden)

    def skipped(self, rel: str, is_dir: bool, stack: list[tuple[str, _IgnoreFile]]) -> bool:
        """Whether the entry at ``rel`` (relative to the workspace) is left out."""
        if rel.rsplit("/", 1)[-1] in (".git", ".jupyter_agent") or rel in self._hidden:
            return True
        if self._whitelist is not None:
            if self._whitelist.matches(rel, is_dir):
                return False  # an explicit glob wins over .gitignore, as in ripgrep
            if not is_dir:
                return True
        # Deeper .gitignore files first; those above the search root (ripgrep's --ignore-file,
        # matched relative to the workspace root) last.
        for base, rules in reversed(stack):
            verdict = rules.verdict(rel[len(base) + 1 :] if base else rel, is_dir)
            if verdict is not None:
                return verdict
        for rules in reversed(self._parents):
            verdict = rules.verdict(rel, is_dir)
            if verdict is not None:
                return verdict
        return False


def _literal_suffix(pieces: list[str]) -> str:
    """The literal characters at the end of a glob's pieces (``""`` if it ends in a wildcard)."""
    suffix: list[str] = []
    for piece in reversed(pieces):
        if len(piece) == 1 and piece not in ".^$*+?{}[]|()\\":
            suffix.append(piece)
        elif len(piece) == 2 and piece[0] == "\\":
            suffix.append(piece[1])
        else:
            break
    return "".join(reversed(suffix))


def _glob_pieces(glob: str) -> list[str]:
    """The regex of ``glob`` in pieces: each matches one character, or is one of ``_REPEATS``."""
    segments = glob.split("/")
    last = len(segments) - 1
    out: list[str] = []
    for index, segment in enumerate(segments):
        if segment == "**":
            if last == 0:
                out.append(".*")
            elif index == 0:
                out.append("(?:.*/)?")
            elif index == last:
                out += ["/", ".+"]
            else:
                out += ["/", "(?:.*/)?"]
            continue
        if index > 0 and segments[index - 1] != "**":
            out.append("/")
        out += _segment_pieces(segment)
    return out


def _segment_pieces(segment: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "\\" and i + 1 < len(segment):
            out.append(re.escape(segment[i + 1]))
            i += 2
            continue
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", i + 2)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                # escaped: a backslash is literal in a glob's class; "[", "&&", "~~" and "||"
                # are set syntax that Python's re reserves (and warns about)
                for special in "\\[&~|":
                    body = body.replace(special, "\\" + special)
                out.append("[" + body + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return out


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FOLDER_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC


def _load_ignore(path: Path) -> _IgnoreFile | None:
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return None
    return _IgnoreFile(text)


def _open_file_at(folder: int, name: str) -> int | None:
    """A descriptor on the regular file ``name`` in ``folder``; None for anything else.

    No symlink is followed (one swapped in since the listing fails the open), and the file is
    opened non-blocking and checked on the descriptor, so a FIFO swapped in cannot block.
    """
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        return None
    return fd


def _load_ignore_at(folder: int) -> _IgnoreFile | None:
    fd = _open_file_at(folder, ".gitignore")
    if fd is None:
        return None
    with open(fd, "rb") as handle:
        return _IgnoreFile(handle.read().decode("utf-8", "replace"))


def _open_folder_at(folder: int, rel: str) -> int:
    """The folder ``rel`` below ``folder``, one no-follow open per component (OSError if not)."""
    current = os.dup(folder)
    try:
        for part in [p for p in rel.split("/") if p not in ("", ".")]:
            following = os.open(part, _FOLDER_FLAGS, dir_fd=current)
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def _walk_files(scope: _Scope) -> Iterator[tuple[int, str, str]]:
    """(folder descriptor, name, path relative to the workspace) of each file, in rg's order.

    The walk holds a descriptor on each folder it is in and opens the next one by name relative
    to it, never following a symlink: a folder swapped for a symlink mid-walk ends that branch
    instead of leading outside the workspace. The descriptor is valid only until the next item.
    """
    try:
        root = os.open(scope.workspace, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError:
        return
    try:
        if scope.target_is_file:
            parent, _, name = scope.target.rpartition("/")
            try:
                folder = _open_folder_at(root, parent)
            except OSError:
                return
            try:
                yield folder, name, scope.target
            finally:
                os.close(folder)
            return
        try:
            folder = _open_folder_at(root, scope.target)
        except OSError:
            return
        rules = _IgnoreRules(scope)
        stack: list[tuple[str, _IgnoreFile]] = []
        yield from _walk_folder(folder, scope.target, rules, stack)
    finally:
        os.close(root)


def _walk_folder(
    folder: int, rel: str, rules: _IgnoreRules, stack: list[tuple[str, _IgnoreFile]]
) -> Iterator[tuple[int, str, str]]:
    """Walk the folder open as ``folder`` (closed at the end) at ``rel``."""
    try:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        spec = _load_ignore_at(folder)
        if spec is not None:
            stack.append((rel, spec))
        try:
            for entry in entries:
                child = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    if entry.is_symlink():
                        continue
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = entry.is_file(follow_symlinks=False)
                except OSError:
                    continue
                if not (is_dir or is_file) or rules.skipped(child, is_dir, stack):
                    continue
                if is_dir:
                    try:
                        below = os.open(entry.name, _FOLDER_FLAGS, dir_fd=folder)
                    except OSError:  # swapped for a symlink (or gone) since the listing
                        continue
                    yield from _walk_folder(below, child, rules, stack)
                else:
                    yield folder, entry.name, child
        finally:
            if spec is not None:
                stack.pop()
    finally:
        os.close(folder)


def _python_grep(scope: _Scope, regex: re.Pattern[str], max_results: int) -> list[str]:
    """Up to ``max_results + 1`` output lines (one more tells that there were more)."""
    return list(_iter_grep(scope, regex, max_results + 1))


def _iter_grep(scope: _Scope, regex: re.Pattern[str], wanted: int) -> Iterator[str]:
    count = 0
    for folder, name, rel in _walk_files(scope):
        for hit in _grep_file(folder, name, rel, regex, wanted - count):
            yield hit
            count += 1
        if count >= wanted:
            return


def _grep_file(folder: int, name: str, rel: str, regex: re.Pattern[str], cap: int) -> list[str]:
    hits: list[str] = []
    fd = _open_file_at(folder, name)
    if fd is None:
        return []
    try:
        with open(fd, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if b"\0" in raw:
                    return []  # binary
                line = raw.decode("utf-8", "replace")
                if line.endswith("\n"):
                    line = line[:-1]
                if regex.search(line):
                    hits.append(_format_hit(rel, number, line))
                    if len(hits) >= cap:
                        break
    except OSError:
        return []
    return hits


def _format_hit(rel: str, number: int, line: str) -> str:
    text = line.rstrip("\r")
    return _format_long_hit(rel, number, text[:MAX_LINE_CHARS], len(text))


def _format_long_hit(rel: str, number: int, head: str, length: int) -> str:
    """A hit from the line's first ``MAX_LINE_CHARS`` characters and its length."""
    if length > MAX_LINE_CHARS:
        return f"{rel}:{number}: {head} {cut_mark(length - MAX_LINE_CHARS)}"
    return f"{rel}:{number}: {head}"


def _python_find(scope: _Scope, wanted: Glob, cap: int) -> list[str]:
    found: list[str] = []
    for _folder, _name, rel in _walk_files(scope):
        if wanted.matches(rel, False):
            found.append(rel)
        if len(found) >= cap:
            break
    return found


def _grep_worker() -> None:
    """The child of ``search_child.python_grep_isolated``: a JSON job in, JSON lines out."""
    job = json.loads(sys.stdin.buffer.read())
    scope = _Scope(
        Path(job["workspace"]),
        job["target"],
        job["target_is_file"],
        job["whitelist"],
        [Path(p) for p in job["parent_ignores"]],
        job["hidden"],
    )
    regex = re.compile(job["pattern"], job["flags"])
    out = sys.stdout
    out.write('"ready"\n')
    out.flush()
    for hit in _iter_grep(scope, regex, job["wanted"]):
        out.write(json.dumps(hit) + "\n")
        out.flush()


if __name__ == "__main__":
    _grep_worker()
