"""The undo journal: what the file tools changed, kept so that ``%agent undo`` can put it back.

Each ``%%agent`` cell starts an *entry* (``begin(label)``); while it runs, every file tool that
creates, changes, moves or removes something records a *step* in that entry, and keeps what the
step would otherwise lose:

* ``write_file``/``edit_file`` keep the file's earlier content. ``write_file`` never changes a
  file in place (it writes a new file and renames it over the old one), so the old file is kept by
  a hard link to the very inode it opened (no copy, whatever its size); ``edit_file`` has already
  read the content through its own descriptor and keeps those bytes. A file with other hard links
  (which another name could change in place) or on another filesystem is copied instead.
* ``remove`` moves what it deletes into the entry (one ``rename``), so removing a large folder
  stays instant; its space is freed when the entry leaves the journal.
* ``mkdir`` (and the parent folders ``write_file``/``move`` create) and ``move`` record names only.

``undo()`` takes the newest entry not yet undone and walks its steps backwards. Before each step
it checks that the path still holds exactly what the agent left there (a SHA-256 of a written
file, the inode of a moved one, an empty created folder); if the user or a program changed it
since, the step is skipped and the report says so — undo never clobbers anybody's later work.
What ``run_bash`` or ``run_python`` changed is not journaled, and the report says that too.

The journal lives in the workspace (``.jupyter_agent/undo`` by default) so that it survives a
kernel restart; it holds at most ``MAX_ENTRIES`` entries. The file tools never reach a
``.jupyter_agent`` folder (``runs_later``), but a command or a journal planted in a sub-folder (a
later workspace) could, so everything read back is treated as hostile. Each entry's label and
each step are signed (``signing``: HMAC-SHA256 under a key kept outside the workspace; the label's
signature covers the entry's number and the journal's folder, a step's the entry's random id and
the step's place): an entry whose label does not check is refused and named in the report, a step
that does not check is reported and not undone. Entries are ordered by number (any number of
digits), so a planted entry numbered past the real ones hides nothing. Paths still go through the
workspace resolver and its guards, every operation is relative to a descriptor held on the
workspace root (``beneath``), and unreadable lines are reported, not trusted.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...errors import SigningError, WorkspaceError
from .atomic import atomic_write_at
from .beneath import WorkspaceRoot
from .private import tighten
from .signing import sign, verify
from .workspace import Workspace

__all__ = [
    "DEFAULT_JOURNAL_FOLDER",
    "MAX_ENTRIES",
    "ChangeJournal",
    "Recording",
    "UndoReport",
    "recording",
]

#: Where the journal lives, relative to the workspace.
DEFAULT_JOURNAL_FOLDER = os.path.join(".jupyter_agent", "undo")
#: Entries kept; the oldest leaves the journal (and frees what it kept) when a new one begins.
MAX_ENTRIES = 10
#: Entries of a removed folder whose modes the journal makes private (and undo gives back).
MAX_TIGHTENED = 10_000
#: A file copied (rather than hard-linked) into the journal is kept only up to this size.
MAX_COPIED_BYTES = 1024 * 1024 * 1024

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_ENTRY_NAME = re.compile(r"[0-9]{1,30}")
_ENTRY_ID = re.compile(r"[0-9a-f]{32}")
#: What the signatures of entry labels and steps are made for (see ``signing``).
_LABEL_PURPOSE = "jupyter-agent undo entry v1"
_STEP_PURPOSE = "jupyter-agent undo step v1"
_KEPT_NAME = re.compile(r"kept-[0-9]{1,9}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_STEPS = "steps.jsonl"
_LABEL = "entry.json"
_UNDONE = "undone"
_CHUNK = 1024 * 1024

NOT_JOURNALED_NOTE = (
    "Changes made by run_bash, run_python or other tools are not journaled and were not undone."
)


@dataclass(frozen=True, slots=True)
class UndoReport:
    """What ``undo()`` did: paths restored, paths left alone (changed since), and a message that
    says both with reasons, for the user."""

    restored: tuple[str, ...]
    skipped: tuple[str, ...]
    message: str


class ChangeJournal:
    """The undo journal of one workspace, kept in ``folder`` (relative to the workspace).

    Thread-safe: the file tools of one reply run concurrently in worker threads, and each makes
    and records its change under the journal's lock, so steps are in the order the changes
    happened (journaled changes of one reply run one at a time; reads stay concurrent).

    Give it the ``Workspace`` the tools use (``context.confinement``) to share its held root.
    """

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str],
        folder: str | os.PathLike[str] = DEFAULT_JOURNAL_FOLDER,
    ) -> None:
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        # The folder as named (a symlink planted there is refused when used, never followed).
        folder_path = self.workspace.resolve_for_writing(
            folder, follow_final_symlink=False, agent_folder_ok=True
        )
        if folder_path == self.workspace.root:
            raise WorkspaceError("The undo journal needs a folder of its own, not the workspace")
        self.folder = folder_path
        #: The journal folder relative to the workspace root (``/``-separated).
        self.relative_folder = self.workspace.held.relative(folder_path)
        self._lock = threading.Lock()
        self._label = "changes"
        self._entry: str | None = None
        #: The number the next kept file of the current entry gets (kept-1, kept-2, ...).
        self._kept_count = 0
        #: The current entry's random id (in its signed label) and how many steps it holds.
        self._entry_id = ""
        self._step_count = 0
        self._started = ""
        #: Whose turns this journal's ``undo`` takes back (the notebook layer sets it: one
        #: folder's journal serves every notebook in it). Each entry is signed with the scope
        #: it was made in; with a scope set, ``undo`` and ``pending_entry`` see only its entries.
        self.scope = ""

    def __repr__(self) -> str:
        return f"ChangeJournal({str(self.folder)!r})"

    @property
    def _held(self) -> WorkspaceRoot:
        return self.workspace.held

    # -- recording -----------------------------------------------------------------------------

    def begin(self, label: str) -> None:
        """Start a new entry (one ``%%agent`` cell); it is written when its first change is.

        The oldest entries leave the journal so that, with the new one, at most ``MAX_ENTRIES``
        remain.
        """
        with self._lock:
            self._label = label
            self._entry = None
            with contextlib.suppress(OSError):
                self._prune(MAX_ENTRIES - 1)

    def relabel(self, label: str) -> None:
        """Rename the current entry (a ``%%agent`` cell's number is known only as it ends:
        each cell it runs takes one before it); its signature is made again."""
        with self._lock:
            self._label = label
            name = self._entry
            if name is None:
                return
            signed = {"label": label, "started": self._started, "id": self._entry_id}
            with (
                contextlib.suppress(OSError, SigningError),
                self._held.folder(self.folder / name, readable=True) as entry_fd,
            ):
                current = self._signed_label(entry_fd, name)
                if current is None or current.get("id") != self._entry_id:
                    return
                if "scope" in current:  # the scope it was made in stays
                    signed["scope"] = current["scope"]
                signature = sign(_LABEL_PURPOSE, self._label_bytes(name, signed))
                atomic_write_at(
                    entry_fd, _LABEL, json.dumps({**signed, "signature": signature}).encode()
                )

    def _in_scope(self, name: str) -> bool:
        """Whether entry ``name`` was made in this journal's scope (any, when none is set)."""
        if not self.scope:
            return True
        try:
            with self._held.folder(self.folder / name, readable=True) as entry_fd:
                signed = self._signed_label(entry_fd, name) or {}
        except OSError:
            return False
        return str(signed.get("scope", "")) == self.scope

    @contextlib.contextmanager
    def recording(self) -> Iterator[Recording]:
        """Hold the journal for one change: the tool keeps what it would lose, makes its change,
        then says what it did; the steps are written when the block ends without an error."""
        with self._lock:
            try:
                entry_fd = self._open_entry()
            except OSError as exc:
                yield Recording(None, self, f"the undo journal is not available ({_reason(exc)})")
                return
            try:
                record = Recording(entry_fd, self, "")
                yield record
                record.write_steps()
            finally:
                os.close(entry_fd)

    def _open_entry(self) -> int:
        """A descriptor on the current entry's folder, created (numbered after the newest) first
        if need be."""
        held = self._held
        if self._entry is not None:
            try:
                return held.open(self.folder / self._entry, _O_DIRECTORY | os.O_RDONLY)
            except FileNotFoundError:
                self._entry = None  # somebody removed the journal: start the entry again
        held.makedirs(self.folder, private=True)
        names = self._entry_names()
        number = int(names[-1]) + 1 if names else 1
        entry_id = secrets.token_hex(16)
        label = {
            "label": self._label,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "id": entry_id,
        }
        if self.scope:
            label["scope"] = self.scope
        with held.folder(self.folder, readable=True) as journal_fd:
            for _ in range(1000):  # past any name somebody else took meanwhile
                name = f"{number:06d}"
                try:
                    os.mkdir(name, 0o700, dir_fd=journal_fd)
                    break
                except FileExistsError:
                    number += 1
            else:
                raise OSError(errno.EEXIST, "no free entry number")
            fd = os.open(name, _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=journal_fd)
        try:
            signature = sign(_LABEL_PURPOSE, self._label_bytes(name, label))
            label_bytes = json.dumps({**label, "signature": signature}).encode()
            atomic_write_at(fd, _LABEL, label_bytes, private=True)
        except (OSError, SigningError) as exc:
            os.close(fd)
            with held.folder(self.folder, readable=True) as journal_fd:
                shutil.rmtree(name, dir_fd=journal_fd, ignore_errors=True)
            raise OSError(errno.EACCES, str(exc)) from None
        self._entry = name
        self._entry_id = entry_id
        self._started = label["started"]
        self._kept_count = 0
        self._step_count = 0
        return fd

    def _label_bytes(self, name: str, label: dict[str, Any]) -> bytes:
        """What an entry label's signature covers: the label, the entry's name and the journal's
        folder (an entry copied or renamed elsewhere does not check)."""
        covered = {**{key: label.get(key) for key in ("label", "started", "id")}, "entry": name}
        if "scope" in label:  # entries made before scopes were signed without one
            covered["scope"] = label["scope"]
        covered["journal"] = str(self.folder)
        return json.dumps(covered, sort_keys=True).encode()

    def _signed_label(self, entry_fd: int, name: str) -> dict[str, Any] | None:
        """The entry's label if its signature checks, else None."""
        try:
            data, _ = _read_kept(entry_fd, _LABEL)
            label = json.loads(data)
        except (OSError, ValueError, _Skip):
            return None
        if not isinstance(label, dict) or not _ENTRY_ID.fullmatch(str(label.get("id", ""))):
            return None
        if not isinstance(label.get("label"), str):
            return None
        if not isinstance(label.get("scope", ""), str):
            return None
        if not verify(_LABEL_PURPOSE, self._label_bytes(name, label), label.get("signature")):
            return None
        return label

    def _entry_names(self) -> list[str]:
        """The entries' folder names, oldest first."""
        try:
            with self._held.folder(self.folder, readable=True) as journal_fd:
                names = os.listdir(journal_fd)
        except FileNotFoundError:
            return []
        return sorted((name for name in names if _ENTRY_NAME.fullmatch(name)), key=int)

    def _is_signed(self, name: str) -> bool:
        try:
            with self._held.folder(self.folder / name, readable=True) as entry_fd:
                return self._signed_label(entry_fd, name) is not None
        except OSError:
            return False

    def _prune(self, keep: int) -> None:
        names = [name for name in self._entry_names() if self._is_signed(name)]
        if len(names) <= keep:
            return
        with self._held.folder(self.folder, readable=True) as journal_fd:
            for name in names[: len(names) - keep]:
                with contextlib.suppress(FileNotFoundError):
                    shutil.rmtree(name, dir_fd=journal_fd)

    def contains_journal(self, rel: str) -> bool:
        """True if the workspace-relative ``rel`` is the journal folder or one of its ancestors."""
        mine = self.relative_folder
        return rel in ("", ".") or mine == rel or mine.startswith(rel.rstrip("/") + "/")

    def protects(self, real: Path) -> bool:
        """True if the file tools must not change the resolved path ``real``: the journal, what
        is in it, or a folder holding it (the workspace root aside). A model that could write
        the journal could forge steps that make the user's undo delete or replace their files.
        """
        rel = self.workspace.held.relative(real)
        if rel == "":
            return False
        mine = self.relative_folder
        return self.contains_journal(rel) or rel.startswith(mine + "/")

    def refuse_if_protected(self, real: Path, shown: str) -> None:
        """Raise ``WorkspaceError`` if ``protects(real)``."""
        if self.protects(real):
            raise WorkspaceError(
                f"Refusing to change {shown}: it is (or holds) the undo journal "
                f"({self.relative_folder}), which only the journal itself writes"
            )

    # -- undoing -------------------------------------------------------------------------------

    def undo(self) -> UndoReport:
        """Put back what the newest entry not yet undone changed; see the module docstring."""
        with self._lock:
            try:
                names = self._entry_names()
                pending = [name for name in names if not self._is_undone(name)]
                refused = [name for name in pending if not self._is_signed(name)]
                pending = [name for name in pending if name not in refused]
                pending = [name for name in pending if self._in_scope(name)]
            except OSError as exc:
                message = f"Cannot read the undo journal: {_reason(exc)}. {NOT_JOURNALED_NOTE}"
                return UndoReport((), (), message)
            refusal = _refusal_note(self.workspace.relative(self.folder), refused)
            if not pending:
                return UndoReport(
                    (),
                    (),
                    "Nothing to undo: the journal holds no file changes made by the agent's file "
                    f"tools that are not undone already.{refusal} {NOT_JOURNALED_NOTE}",
                )
            name = pending[-1]
            if name == self._entry:
                self._entry = None  # later changes start a new entry
            report = self._undo_entry(name)
            if not refusal:
                return report
            return UndoReport(report.restored, report.skipped, report.message + refusal)

    def pending_entry(self) -> tuple[str, float] | None:
        """The label of the entry ``undo()`` would take and when its first change was made
        (``time.time()``, to the second); ``None``: nothing to undo."""
        with self._lock:
            try:
                names = self._entry_names()
                pending = [n for n in names if not self._is_undone(n) and self._is_signed(n)]
                pending = [n for n in pending if self._in_scope(n)]
                if not pending:
                    return None
                with self._held.folder(self.folder / pending[-1]) as entry_fd:
                    signed = self._signed_label(entry_fd, pending[-1]) or {}
            except OSError:
                return None
            label, started = signed.get("label"), signed.get("started")
            if not isinstance(label, str):
                return None
            try:
                return label, datetime.fromisoformat(str(started)).timestamp()
            except ValueError:
                return label, 0.0

    def _is_undone(self, name: str) -> bool:
        with self._held.folder(self.folder / name) as entry_fd:
            try:
                os.stat(_UNDONE, dir_fd=entry_fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
        return True

    def _undo_entry(self, name: str) -> UndoReport:
        held = self._held
        entry_path = self.folder / name
        entry_fd = held.open(entry_path, _O_DIRECTORY | os.O_RDONLY)
        try:
            signed = self._signed_label(entry_fd, name) or {}
            label = str(signed.get("label", "an earlier cell"))
            steps, unreadable = _read_steps(entry_fd, str(signed.get("id", "")))
            undoer = _Undoer(self, entry_fd, self.workspace.relative(entry_path))
            for step in reversed(steps):
                undoer.undo(step)
            for line in unreadable:
                undoer.skip(f"line {line} of the journal", "it is not a step the journal wrote")
            with contextlib.suppress(OSError):
                os.close(os.open(_UNDONE, os.O_WRONLY | os.O_CREAT | _O_CLOEXEC, dir_fd=entry_fd))
        finally:
            os.close(entry_fd)
        return undoer.report(label)


class Recording:
    """One change being recorded (see ``ChangeJournal.recording``); a disabled recording (no
    journal, or one that cannot be written) accepts every call and keeps nothing."""

    def __init__(self, entry_fd: int | None, journal: ChangeJournal | None, problem: str) -> None:
        self._entry_fd = entry_fd
        self._journal = journal
        self._steps: list[dict[str, Any]] = []
        #: Why this change will not be undoable ("" when it will be, or when nothing journals).
        self.problem = problem

    @property
    def active(self) -> bool:
        return self._entry_fd is not None

    @property
    def note(self) -> str:
        """A sentence for the tool's result when this change could not be journaled."""
        return f" (Note: undo will not cover this change: {self.problem}.)" if self.problem else ""

    def missing_folders(self, held: WorkspaceRoot, folder: Path) -> list[str]:
        """The folders among ``folder`` and its ancestors that do not exist yet, outermost first
        (call it before creating them, then ``created_folders``)."""
        if not self.active:
            return []
        rel = held.relative(folder)
        missing: list[str] = []
        parts = [part for part in rel.split("/") if part]
        for index in range(len(parts), 0, -1):
            candidate = "/".join(parts[:index])
            try:
                os.close(held.open(held.root / candidate, _O_DIRECTORY | os.O_RDONLY))
            except FileNotFoundError:
                missing.append(candidate)
                continue
            except OSError:
                break
            break
        return list(reversed(missing))

    def created_folders(self, rels: list[str]) -> None:
        for rel in rels:
            self._steps.append({"op": "mkdir", "path": rel})

    def keep_file(self, folder: int, name: str) -> dict[str, Any]:
        """Keep the file ``name`` of the held ``folder`` before it is replaced; what to pass to
        ``wrote`` as ``before``. A missing file is recorded as absent."""
        if not self.active:
            return {}
        try:
            fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=folder)
        except FileNotFoundError:
            return {"kind": "absent"}
        except OSError as exc:
            return self._not_kept(_reason(exc))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return self._not_kept("it is not a regular file")
            kept = self._next_kept_name()
            mode = stat.S_IMODE(info.st_mode)
            if info.st_nlink == 1 and self._link(fd, kept):
                # the same inode, the user's mode until the write replaces it: ``wrote`` makes
                # it private then (only the journal holds it from that moment)
                return {"kind": "file", "kept": kept, "mode": mode}
            if info.st_size > MAX_COPIED_BYTES:
                return self._not_kept(
                    f"it is larger than the {MAX_COPIED_BYTES // 2**20} MiB copied into the journal"
                )
            os.set_blocking(fd, True)
            self._copy(fd, kept)
            return {"kind": "file", "kept": kept, "mode": mode}
        except OSError as exc:
            return self._not_kept(_reason(exc))
        finally:
            os.close(fd)

    def keep_bytes(self, data: bytes, mode: int) -> dict[str, Any]:
        """Keep content a tool has already read through its own descriptor (``edit_file``)."""
        if not self.active:
            return {}
        assert self._entry_fd is not None
        kept = self._next_kept_name()
        try:
            atomic_write_at(self._entry_fd, kept, data, private=True)
        except OSError as exc:
            return self._not_kept(_reason(exc))
        return {"kind": "file", "kept": kept, "mode": stat.S_IMODE(mode)}

    def wrote(self, rel: str, before: dict[str, Any], data: bytes) -> None:
        """The file ``rel`` now holds ``data`` (it held ``before``)."""
        if self.active:
            after = hashlib.sha256(data).hexdigest()
            self._steps.append({"op": "write", "path": rel, "before": before, "after": after})
            if before.get("kind") == "file":
                self._make_private(before["kept"])

    def moved(self, source: str, destination: str, folder: int, name: str) -> None:
        """``source`` was renamed to ``destination`` (``name`` in the held ``folder``)."""
        if not self.active:
            return
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError as exc:
            self.problem = _reason(exc)
            return
        self._steps.append(
            {
                "op": "move",
                "source": source,
                "destination": destination,
                "inode": [info.st_dev, info.st_ino],
            }
        )

    def trash(self, folder: int, name: str, rel: str) -> bool:
        """Move ``name`` (``rel``) from the held ``folder`` into the journal instead of deleting
        it; False if the caller must delete it itself (nothing journals, or it cannot be kept:
        ``problem`` then says why)."""
        if not self.active:
            return False
        assert self._journal is not None and self._entry_fd is not None
        if self._journal.contains_journal(rel):
            self.problem = "it holds the undo journal itself"
            return False
        kept = self._next_kept_name()
        try:
            os.rename(name, kept, src_dir_fd=folder, dst_dir_fd=self._entry_fd)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                self.problem = "it is on another filesystem than the journal"
            else:
                self.problem = _reason(exc)
            return False
        mode = self._make_private(kept)
        step: dict[str, Any] = {"op": "remove", "path": rel, "kept": kept}
        if mode is not None:
            step["mode"] = mode
        inner = self._make_tree_private(kept)
        if inner:
            step["modes"] = inner
        self._steps.append(step)
        return True

    def _make_tree_private(self, kept: str) -> dict[str, int]:
        """``_make_private`` for what a kept folder holds (up to ``MAX_TIGHTENED`` entries):
        the earlier modes of those it changed, by their path inside it."""
        assert self._entry_fd is not None
        changed: dict[str, int] = {}
        seen = 0
        try:
            walk = os.fwalk(kept, dir_fd=self._entry_fd, follow_symlinks=False)
            for top, dirs, files, top_fd in walk:
                for name in [*dirs, *files]:
                    seen += 1
                    if seen > MAX_TIGHTENED:
                        return changed
                    mode = _tighten_at(top_fd, name)
                    if mode is not None:
                        changed[os.path.relpath(os.path.join(top, name), kept)] = mode
        except OSError:
            pass
        return changed

    def _make_private(self, kept: str) -> int | None:
        """Take group and other bits off what the entry keeps as ``kept`` (a file or folder
        now held by the journal alone); its earlier mode, for undo to give back."""
        assert self._entry_fd is not None
        try:
            fd = os.open(
                kept, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=self._entry_fd
            )
        except OSError:
            return None  # a symlink kept as it is: it has no mode of its own
        try:
            mode = stat.S_IMODE(os.fstat(fd).st_mode)
            tighten(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        return mode

    def removed_empty_folder(self, rel: str) -> None:
        if self.active:
            self._steps.append({"op": "rmdir", "path": rel})

    # -- internals -----------------------------------------------------------------------------

    def _not_kept(self, reason: str) -> dict[str, Any]:
        self.problem = f"its earlier content could not be kept ({reason})"
        return {"kind": "lost", "reason": reason}

    def _next_kept_name(self) -> str:
        assert self._journal is not None
        self._journal._kept_count += 1  # under the journal's lock
        return f"kept-{self._journal._kept_count}"

    def _link(self, fd: int, kept: str) -> bool:
        """Hard-link the open file into the entry (the inode opened, not whatever the name now
        is); False where that cannot be done (another filesystem, no /proc)."""
        assert self._entry_fd is not None
        try:
            os.link(f"/proc/self/fd/{fd}", kept, dst_dir_fd=self._entry_fd, follow_symlinks=True)
        except OSError:
            return False
        return True

    def _copy(self, fd: int, kept: str) -> None:
        assert self._entry_fd is not None
        out = os.open(
            kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o600, dir_fd=self._entry_fd
        )
        try:
            while chunk := os.read(fd, _CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
        finally:
            os.close(out)

    def write_steps(self) -> None:
        if not self.active or not self._steps:
            return
        assert self._entry_fd is not None and self._journal is not None
        journal = self._journal
        lines_text = []
        for step in self._steps:
            index = journal._step_count
            journal._step_count += 1
            try:
                signature = sign(_STEP_PURPOSE, _step_bytes(journal._entry_id, index, step))
            except SigningError as exc:
                self.problem = str(exc)
                self._steps = []
                return
            lines_text.append(json.dumps({"step": step, "n": index, "signature": signature}))
        lines = "".join(line + "\n" for line in lines_text).encode()
        fd = os.open(
            _STEPS,
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | _O_CLOEXEC | _O_NOFOLLOW,
            0o600,
            dir_fd=self._entry_fd,
        )
        try:
            os.write(fd, lines)
        finally:
            os.close(fd)
        self._steps = []


@contextlib.contextmanager
def recording(journal: ChangeJournal | None) -> Iterator[Recording]:
    """``journal.recording()``, or a disabled recording when there is no journal."""
    if journal is None:
        yield Recording(None, None, "")
        return
    with journal.recording() as record:
        yield record


# -- undo ----------------------------------------------------------------------------------------


class _Undoer:
    """Undoes steps one at a time, each only if the path holds what the agent left there."""

    def __init__(self, journal: ChangeJournal, entry_fd: int, entry_shown: str) -> None:
        self.journal = journal
        self.workspace = journal.workspace
        self.held = journal.workspace.held
        self.entry_fd = entry_fd
        self.entry_shown = entry_shown
        self.restored: list[str] = []
        self.skipped: list[tuple[str, str]] = []
        self.done: list[str] = []

    def skip(self, shown: str, reason: str) -> None:
        self.skipped.append((shown, reason))

    def undo(self, step: dict[str, Any]) -> None:
        op = step["op"]
        shown = step["source"] if op == "move" else step["path"]
        try:
            if op == "write":
                self._write(step)
            elif op == "mkdir":
                self._mkdir(step)
            elif op == "move":
                self._move(step)
            elif op == "remove":
                self._remove(step)
            else:
                self._rmdir(step)
        except _Skip as skip:
            self.skip(shown, str(skip))
        except WorkspaceError as exc:
            self.skip(shown, f"the journal names a path the file tools may not change ({exc})")
        except (FileNotFoundError, NotADirectoryError):
            self.skip(shown, "the folder it was in, or what the journal kept of it, is gone")
        except OSError as exc:
            self.skip(shown, _reason(exc))

    def _resolve(self, rel: str) -> tuple[Path, str]:
        path = self.workspace.resolve_for_writing(rel, follow_final_symlink=False)
        if path == self.workspace.root:
            raise _Skip("the journal names the workspace root")
        self.journal.refuse_if_protected(path, rel)
        return path, self.workspace.relative(path)

    def _entry(self, path: Path) -> os.stat_result | None:
        try:
            with self.held.parent_of(path) as (folder, name):
                return os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _kept_path(self, kept: str) -> str:
        return f"{self.entry_shown}/{kept}"

    def _write(self, step: dict[str, Any]) -> None:
        path, shown = self._resolve(step["path"])
        before = step["before"]
        if _file_digest(self.held, path) != step["after"]:
            where = (
                f"; its earlier content is kept in {self._kept_path(before['kept'])}"
                if before["kind"] == "file"
                else ""
            )
            raise _Skip(f"it was changed after the agent wrote it, so it was left as it is{where}")
        with self.held.parent_of(path) as (folder, name):
            if before["kind"] == "absent":
                os.unlink(name, dir_fd=folder)
                self.restored.append(shown)
                self.done.append(f"{shown} (removed: the agent created it)")
                return
            if before["kind"] != "file":
                raise _Skip(f"its earlier content was not kept ({before.get('reason', '?')})")
            try:
                os.rename(before["kept"], name, src_dir_fd=self.entry_fd, dst_dir_fd=folder)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                data, _ = _read_kept(self.entry_fd, before["kept"])
                atomic_write_at(folder, name, data)
            _give_back_mode(folder, name, before.get("mode"))
        self.restored.append(shown)
        self.done.append(f"{shown} (earlier content back)")

    def _mkdir(self, step: dict[str, Any]) -> None:
        path, shown = self._resolve(step["path"])
        info = self._entry(path)
        if info is None:
            return  # gone already: nothing to undo, nothing to say
        if not stat.S_ISDIR(info.st_mode):
            raise _Skip("the agent created it as a folder, and it is something else now")
        with self.held.parent_of(path) as (folder, name):
            try:
                os.rmdir(name, dir_fd=folder)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise _Skip(
                        "the agent created this folder, but it holds files now; left as it is"
                    ) from None
                raise
        self.restored.append(shown + "/")
        self.done.append(f"{shown}/ (removed: the agent created it)")

    def _move(self, step: dict[str, Any]) -> None:
        source, source_shown = self._resolve(step["source"])
        destination, destination_shown = self._resolve(step["destination"])
        info = self._entry(destination)
        if info is None or [info.st_dev, info.st_ino] != step["inode"]:
            raise _Skip(
                f"the agent moved it to {destination_shown}, which holds something else now"
            )
        if self._entry(source) is not None:
            raise _Skip(f"it was moved to {destination_shown}, and {source_shown} is taken now")
        with (
            self.held.parent_of(destination) as (from_folder, from_name),
            self.held.parent_of(source) as (to_folder, to_name),
        ):
            os.rename(from_name, to_name, src_dir_fd=from_folder, dst_dir_fd=to_folder)
        self.restored.append(source_shown)
        self.done.append(f"{source_shown} (moved back from {destination_shown})")

    def _remove(self, step: dict[str, Any]) -> None:
        path, shown = self._resolve(step["path"])
        if self._entry(path) is not None:
            raise _Skip(
                "something new is at its path now, so it was left as it is; what the agent "
                f"removed is kept in {self._kept_path(step['kept'])}"
            )
        with self.held.parent_of(path) as (folder, name):
            os.rename(step["kept"], name, src_dir_fd=self.entry_fd, dst_dir_fd=folder)
            _give_back_mode(folder, name, step.get("mode"))
            _give_back_modes(folder, name, step.get("modes"))
        self.restored.append(shown)
        self.done.append(f"{shown} (back: the agent removed it)")

    def _rmdir(self, step: dict[str, Any]) -> None:
        path, shown = self._resolve(step["path"])
        if self._entry(path) is not None:
            raise _Skip("something is at its path now, so it was left as it is")
        with self.held.parent_of(path) as (folder, name):
            os.mkdir(name, 0o777, dir_fd=folder)
        self.restored.append(shown + "/")
        self.done.append(f"{shown}/ (empty folder back: the agent removed it)")

    def report(self, label: str) -> UndoReport:
        parts = [f"Undid the file changes of {label!r}."]
        if self.done:
            parts.append("Restored: " + "; ".join(self.done) + ".")
        elif not self.skipped:
            parts.append("Everything was already as it had been.")
        if self.skipped:
            reasons = "; ".join(f"{shown} — {why}" for shown, why in self.skipped)
            parts.append(f"Not restored: {reasons}.")
        parts.append(NOT_JOURNALED_NOTE)
        return UndoReport(
            tuple(self.restored), tuple(shown for shown, _ in self.skipped), " ".join(parts)
        )


def _tighten_at(folder: int, name: str) -> int | None:
    """Take group and other bits off ``name`` in ``folder`` (no symlink followed); its earlier
    mode if that changed it."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode) or not stat.S_IMODE(info.st_mode) & 0o077:
            return None
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None  # a socket, a symlink swapped in: left as it is, in a 0700 folder
    try:
        tighten(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return stat.S_IMODE(info.st_mode)


def _give_back_modes(folder: int, name: str, modes: object) -> None:
    """``_give_back_mode`` for the entries of a folder undo put back (``_make_tree_private``)."""
    if not isinstance(modes, dict):
        return
    for rel, mode in list(modes.items())[:MAX_TIGHTENED]:
        if isinstance(rel, str) and not rel.startswith(("/", "..")) and ".." not in rel.split("/"):
            with contextlib.suppress(OSError):
                _give_back_mode(folder, f"{name}/{rel}", mode)


def _give_back_mode(folder: int, name: str, mode: object) -> None:
    """Give what undo put back the mode it had before the journal made its copy private."""
    if not isinstance(mode, int) or isinstance(mode, bool) or not 0 <= mode <= 0o7777:
        return
    fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=folder)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


class _Skip(Exception):
    """A step that must not be undone; the message says why."""


def _file_digest(held: WorkspaceRoot, path: Path) -> str | None:
    """SHA-256 of the regular file at ``path`` (not following a symlink); None if it is absent
    or not a regular file."""
    try:
        fd = held.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
            return None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _read_kept(entry_fd: int, kept: str) -> tuple[bytes, int]:
    fd = os.open(kept, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=entry_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Skip("what the journal kept is not a regular file")
        os.set_blocking(fd, True)
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks), info.st_mode
    finally:
        os.close(fd)


def _step_bytes(entry_id: str, index: int, step: dict[str, Any]) -> bytes:
    """What a step's signature covers: the entry it belongs to, its place, the step."""
    return json.dumps({"entry": entry_id, "n": index, "step": step}, sort_keys=True).encode()


def _refusal_note(journal_shown: str, refused: list[str]) -> str:
    """The report's sentence about entries whose signature does not check ("" for none)."""
    if not refused:
        return ""
    names = ", ".join(f"{journal_shown}/{name}" for name in refused[-5:])
    more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
    return (
        f" Refused {names}{more}: not signed by this agent — altered since, planted, or "
        "written by an older version — and it could name changes the agent never made, so "
        "nothing of it was undone; remove it by hand if you do not need it."
    )


def _read_steps(entry_fd: int, entry_id: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The entry's steps, each checked (signature, place, shape: the file is where a command
    could write it, so hostile); and the numbers of the lines that are not steps the journal
    wrote."""
    try:
        data, _ = _read_kept(entry_fd, _STEPS)
    except FileNotFoundError:
        return [], []
    steps: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            signed = json.loads(line)
        except ValueError:
            bad.append(number)
            continue
        step = signed.get("step") if isinstance(signed, dict) else None
        index = signed.get("n") if isinstance(signed, dict) else None
        if (
            entry_id
            and isinstance(step, dict)
            and index == len(steps)
            and verify(_STEP_PURPOSE, _step_bytes(entry_id, index, step), signed.get("signature"))
            and _well_formed(step)
        ):
            steps.append(step)
        else:
            bad.append(number)
    return steps, bad


def _well_formed(step: object) -> bool:
    if not isinstance(step, dict):
        return False
    op = step.get("op")
    if op in ("mkdir", "rmdir"):
        return _is_path(step.get("path"))
    if op == "remove":
        return _is_path(step.get("path")) and _is_kept(step.get("kept"))
    if op == "move":
        inode = step.get("inode")
        return (
            _is_path(step.get("source"))
            and _is_path(step.get("destination"))
            and isinstance(inode, list)
            and len(inode) == 2
            and all(isinstance(n, int) for n in inode)
        )
    if op == "write":
        before = step.get("before")
        if not (_is_path(step.get("path")) and isinstance(step.get("after"), str)):
            return False
        if not _SHA256.fullmatch(step["after"]) or not isinstance(before, dict):
            return False
        kind = before.get("kind")
        if kind == "file":
            return _is_kept(before.get("kept"))
        return kind in ("absent", "lost")
    return False


def _is_path(value: object) -> bool:
    return isinstance(value, str) and value not in ("", ".") and "\x00" not in value


def _is_kept(value: object) -> bool:
    return isinstance(value, str) and _KEPT_NAME.fullmatch(value) is not None


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
