"""Project instructions: the user's ``AGENTS.md`` (else ``CLAUDE.md``) at the workspace root.

Many projects keep standing instructions for coding agents in such a file; the session adds it
to the system prompt (read afresh for every turn, so an edit counts from the next cell). A file
over ``MAX_INSTRUCTIONS_CHARS`` is cut, with a note saying so to the model and in
``%agent config``. It is the user's file: a file tool's call that would create, change, move or
remove it — ``write_file``, ``edit_file``, ``move`` either way (also a folder holding one),
``remove`` — declares, through ``needs_approval``, that it waits for the user's approval even when
the tool is allowed (``git_commit`` asks before committing one).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .redact import redact

#: The files looked for at the workspace root, the first found wins.
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")

#: Entries of a moved folder looked through for an instructions file; past them, the move asks.
MAX_MOVE_SCANNED = 2_000

#: Characters of the file the system prompt carries (about 5,000 tokens); the rest is cut.
MAX_INSTRUCTIONS_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """The instructions found: which file, its text (cut to size) and its full length."""

    name: str
    text: str
    length: int
    #: The first 8 hex digits of the whole file's SHA-256: what the cell shows.
    digest: str = ""

    @property
    def cut(self) -> bool:
        return self.length > len(self.text)

    def describe(self) -> str:
        """For ``%agent config``: ``AGENTS.md (1,234 characters)``, and whether it was cut."""
        shown = f"{self.name} ({self.length:,} characters)"
        if self.cut:
            shown += f"; cut to the first {MAX_INSTRUCTIONS_CHARS:,}"
        return shown

    def prompt_section(self) -> str:
        """What joins the system prompt."""
        section = (
            f"# Project instructions\n\nThe user's {self.name} at the workspace root, which you "
            f"follow:\n\n{self.text.strip()}"
        )
        if self.cut:
            section += (
                f"\n\n[{self.name} is {self.length:,} characters; only its first "
                f"{MAX_INSTRUCTIONS_CHARS:,} characters are shown here. Read the file for the "
                "rest.]"
            )
        return section


def find_instructions(workspace: str | os.PathLike[str]) -> ProjectInstructions | None:
    """The project instructions at ``workspace``'s root, or ``None``."""
    root = Path(workspace)
    for name in INSTRUCTION_FILES:
        path = root / name
        try:
            if not path.is_file():
                continue
            data = path.read_bytes()
        except OSError:
            continue
        # a key pasted into the file reaches the model no more than one in a tool result (the
        # whole text is redacted before it is cut, so no cut secret slips through); the hash
        # the cell shows stays the file's own
        text, _count = redact(data.decode("utf-8", errors="replace"))
        digest = hashlib.sha256(data).hexdigest()[:8]
        return ProjectInstructions(name, text[:MAX_INSTRUCTIONS_CHARS], len(text), digest)
    return None


def with_instructions(system_prompt: str, workspace: str | os.PathLike[str]) -> str:
    """``system_prompt`` followed by the workspace's project instructions, if it has any."""
    found = find_instructions(workspace)
    if found is None:
        return system_prompt
    return f"{system_prompt}\n\n{found.prompt_section()}"


def instructions_write_reason(workspace: Path, file_path: object) -> str | None:
    """Why a write to ``file_path`` needs the user's approval: it is their instructions file."""
    if not isinstance(file_path, str) or not file_path:
        return None
    try:  # symlinks followed: a link to AGENTS.md is AGENTS.md
        target = Path(os.path.realpath(workspace / file_path))
        root = Path(os.path.realpath(workspace))
    except (ValueError, OSError):
        return None
    if target.parent == root and target.name.lower() in {n.lower() for n in INSTRUCTION_FILES}:
        return f"{target.name} holds the user's project instructions"
    linked = _linked_instructions(root).get(target)
    if linked is not None:
        return f"{linked} is a link to it: it holds the user's project instructions"
    return None


def _linked_instructions(root: Path) -> dict[Path, str]:
    """Where the root's instructions files lead (``AGENTS.md -> docs/agents.md``): the real
    path of each, dangling links included (``realpath`` resolves those too), by its name."""
    found: dict[Path, str] = {}
    for name in INSTRUCTION_FILES:
        try:
            found.setdefault(Path(os.path.realpath(root / name)), name)
        except (ValueError, OSError):
            continue
    return found


def _is_instructions_name(name: str) -> bool:
    return name.lower() in {n.lower() for n in INSTRUCTION_FILES}


def instructions_move_reason(workspace: Path, source: object, destination: object) -> str | None:
    """Why a move needs the user's approval: it takes their instructions file away, puts a file
    in its place, or moves a folder that holds one."""
    if not isinstance(source, str) or not isinstance(destination, str) or not source:
        return None
    try:
        root = Path(os.path.realpath(workspace))
        parent, leaf = os.path.split(source.rstrip("/") or "/")
        moved = Path(os.path.realpath(workspace / (parent or "."))) / leaf  # the link, if one
        target = Path(os.path.realpath(workspace / destination))
        if target.is_dir():
            target = target / moved.name
    except (ValueError, OSError):
        return None
    linked = _linked_instructions(root)
    for path in (moved, target):
        if path.parent == root and _is_instructions_name(path.name):
            return f"{path.name} holds the user's project instructions"
        if path in linked:
            return f"{linked[path]} is a link to {path.name}: it holds the project instructions"
    if moved.is_dir() and not moved.is_symlink():
        held = _held_instructions(moved)
        if held is not None:
            return f"the folder holds {held}, a project instructions file"
    return None


def _held_instructions(folder: Path) -> str | None:
    """The first instructions file's path in ``folder`` (any depth), or a note if too many
    entries to look through."""
    seen = 0
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            if _is_instructions_name(name):
                return os.path.relpath(os.path.join(top, name), folder.parent)
        seen += len(dirs) + len(files)
        if seen > MAX_MOVE_SCANNED:
            return f"more than {MAX_MOVE_SCANNED:,} entries (perhaps AGENTS.md)"
    return None
