"""Workspace confinement: the one resolver every path-taking tool goes through.

A model can be prompt-injected, so every path it hands a tool is treated as hostile. ``resolve``
turns it into an absolute, symlink-free path and refuses it — before anything is touched — if it
lands outside the workspace root: ``..`` escapes, absolute paths elsewhere, sibling folders whose
name merely starts with the root's name (``/x/ws_evil`` next to ``/x/ws``), and symlinks (final or
in a parent folder) that point outside. The root itself may be reached through a symlink. A
path inside a credential store or one of Jupyter's folders is refused too (``hidden_paths``),
even inside the workspace: with the workspace at ``~``, ``.ssh/id_ed25519`` is one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import PathOutsideWorkspaceError, WorkspaceError
from . import runs_later
from .hidden_paths import refuse_hidden

if TYPE_CHECKING:
    from .beneath import WorkspaceRoot

#: Linux limits; checked up front so that a silly path is a clean error, not an OSError later.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


class Workspace:
    """A folder that tools are confined to."""

    __slots__ = ("_held", "_prefix", "root")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise WorkspaceError(f"Workspace {os.fspath(root)!r} is not a folder")
        self.root = Path(real)
        self._prefix = real if real.endswith(os.sep) else real + os.sep
        self._held: WorkspaceRoot | None = None

    @property
    def held(self) -> WorkspaceRoot:
        """A descriptor held on the root: file tools do their I/O relative to it (``beneath``)."""
        if self._held is None:
            from .beneath import WorkspaceRoot

            self._held = WorkspaceRoot(self.root)
        return self._held

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def contains(self, real_path: str) -> bool:
        """True if an already-resolved absolute path is the root or lies under it."""
        return real_path == str(self.root) or real_path.startswith(self._prefix)

    def resolve(
        self,
        path: str | os.PathLike[str],
        *,
        follow_final_symlink: bool = True,
        agent_folder_ok: bool = False,
    ) -> Path:
        """Resolve ``path`` (relative to the root, or absolute) to a real path inside the root.

        With ``follow_final_symlink=False`` the last component is kept as named (its parent is
        still fully resolved): ``move`` and ``remove`` then act on a symlink itself, never on what
        it points to. Raises ``PathOutsideWorkspaceError`` or ``WorkspaceError``.

        A path inside a ``.jupyter_agent`` folder (at any depth: undo journals, session records)
        or the agent's data folder is refused, unless ``agent_folder_ok`` (the agent's own code
        writing its records, never a path the model chose).
        """
        text = _check_text(path)
        candidate = text if os.path.isabs(text) else os.path.join(self.root, text)
        if follow_final_symlink:
            real = os.path.realpath(candidate)
        else:
            # Split before collapsing ``..`` so that ``link/../x`` means what the OS means by it.
            parent, leaf = os.path.split(candidate.rstrip(os.sep) or os.sep)
            if leaf in ("", os.curdir, os.pardir):
                real = os.path.realpath(candidate)
            else:
                real = os.path.join(os.path.realpath(parent), leaf)
        if os.path.normpath(real) != real:
            # realpath() gives up on a symlink loop and returns the rest of the path unresolved.
            raise WorkspaceError(f"Path {text!r} runs into a symlink loop")
        if not self.contains(real):
            raise PathOutsideWorkspaceError(
                f"Path {text!r} is outside the workspace; only paths inside it are allowed"
            )
        refuse_hidden(real, str(self.root), repr(text))
        if not agent_folder_ok:
            reason = runs_later.refusal_to_read(Path(real), self.relative(real).split("/"))
            if reason is not None:
                raise WorkspaceError(f"Refusing to use {text}: {reason}")
        return Path(real)

    def resolve_for_writing(
        self,
        path: str | os.PathLike[str],
        *,
        follow_final_symlink: bool = True,
        agent_folder_ok: bool = False,
    ) -> Path:
        """``resolve`` for a path a tool will create, change, move or remove.

        Also refuses anything in (or named) ``.git``, wherever it is in the workspace: a
        repository's ``.git`` holds code that git runs (hooks, ``core.fsmonitor``, filter
        drivers), and a model that could write there would have ``git_commit`` run it. The check
        is on the resolved path, so a symlink into ``.git`` is caught too; reading stays allowed.

        And refuses every file that runs later by itself (``runs_later.refusal``: a module
        shadowing one the kernel imports at start, ``.pth`` files, IPython and Jupyter start-up
        and configuration, shell start files, ``.ipynb_checkpoints``).
        """
        real = self.resolve(
            path, follow_final_symlink=follow_final_symlink, agent_folder_ok=agent_folder_ok
        )
        self.refuse_if_runs_later(real, os.fspath(path), agent_folder_ok=agent_folder_ok)
        return real

    def refuse_if_runs_later(
        self, real: Path, shown: str, *, agent_folder_ok: bool = False
    ) -> None:
        """Raise ``WorkspaceError`` if no tool may create or change the resolved path ``real``
        (``resolve_for_writing``'s checks, for a path found another way: a move's final
        destination, what a moved folder holds)."""
        parts = self.relative(real).split("/")
        if any(is_git_name(part) for part in parts):
            raise WorkspaceError(
                f"Refusing to change {shown}: it is inside a .git folder (or named "
                ".git), which the file tools never modify; use git_commit to record changes"
            )
        if agent_folder_ok and runs_later.AGENT_FOLDER in parts:
            return
        reason = runs_later.refusal(real, parts) if parts != ["."] else None
        if reason is not None:
            raise WorkspaceError(
                f"Refusing to create or change {shown}: {reason}. The agent's file tools never "
                "write files that run by themselves later; if you want it, write it yourself "
                "(outside the agent)"
            )

    def relative(self, real_path: str | os.PathLike[str]) -> str:
        """A resolved path as the model should see it: relative to the root, ``.`` for the root."""
        rel = os.path.relpath(os.fspath(real_path), self.root)
        return "." if rel == os.curdir else rel


#: Characters that HFS+ ignores in names (so ``.g\u200cit`` is ``.git`` there), as git lists them.
_IGNORABLE_IN_NAMES = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


def is_git_name(name: str) -> bool:
    """True for ``.git`` as any filesystem may spell it (case, NTFS trailing dots, HFS+)."""
    folded = _IGNORABLE_IN_NAMES.sub("", name).rstrip(". ").lower()
    return folded in (".git", "git~1")


def _check_text(path: str | os.PathLike[str]) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise WorkspaceError(f"A path must be a string, not {type(path).__name__}")
    if path == "":
        raise WorkspaceError("The path is empty")
    if "\x00" in path:
        raise WorkspaceError("The path contains a NUL byte")
    try:
        encoded = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise WorkspaceError(f"The path is not valid text: {exc}") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise WorkspaceError(
            f"The path is too long ({len(encoded)} bytes; at most {MAX_PATH_BYTES})"
        )
    for part in path.split("/"):
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise WorkspaceError(
                f"A name in the path is too long (at most {MAX_NAME_BYTES} bytes): {part[:40]!r}..."
            )
    return path
