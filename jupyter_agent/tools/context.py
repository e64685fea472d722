"""``ToolContext``: what a tool may know about the agent, without depending on the Agent class.

A context built by hand holds plain values (handy in tests and for tools used on their own). A
context owned by an ``Agent`` is *bound* to it: ``system_prompt`` and ``session_context`` are read
from the agent each time, so ``clear_context()`` and ``set_system_prompt()`` show up at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .guard.workspace import Workspace

if TYPE_CHECKING:
    from .guard.journal import ChangeJournal

DEFAULT_SESSION_CONTEXT_FILE = os.path.join(".jupyter_agent", "session.md")


class ContextSource(Protocol):
    """What a bound context reads its live state from (an ``Agent`` satisfies it)."""

    @property
    def system_prompt(self) -> str: ...

    @property
    def session_context(self) -> str: ...


class ToolContext:
    """The state tools receive: the workspace, the system prompt, the session context.

    ``journal`` (a ``ChangeJournal``, or None for none) is where the file tools record what they
    change, so that ``%agent undo`` can put it back; whoever runs cells sets it and calls its
    ``begin(label)`` per cell.

    ``shell_network`` (``AgentMagics.shell_network``, default False): whether ``run_bash``'s
    sandbox keeps the network; read at each call, so a change applies to the next command.

    ``session_context_file_path`` defaults to ``.jupyter_agent/session.md`` in the workspace; a
    relative path is taken relative to the workspace (and confined to it) when the session file
    is written.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str] | Workspace = ".",
        system_prompt: str = "",
        session_context: str = "",
        session_context_file_path: str | os.PathLike[str] | None = None,
        journal: ChangeJournal | None = None,
    ) -> None:
        self._workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self._system_prompt = system_prompt
        self._session_context = session_context
        self._source: ContextSource | None = None
        self.journal: ChangeJournal | None = journal
        self.shell_network: bool = False
        self.session_context_file_path: Path = (
            Path(session_context_file_path)
            if session_context_file_path is not None
            else self._workspace.root / DEFAULT_SESSION_CONTEXT_FILE
        )

    @property
    def workspace(self) -> Path:
        """The workspace root (a real, absolute path)."""
        return self._workspace.root

    @property
    def confinement(self) -> Workspace:
        """The resolver that confines every path a tool takes to the workspace."""
        return self._workspace

    def bind(self, source: ContextSource) -> None:
        """Read ``system_prompt`` and ``session_context`` live from ``source`` from now on."""
        self._source = source

    @property
    def system_prompt(self) -> str:
        return self._source.system_prompt if self._source is not None else self._system_prompt

    @system_prompt.setter
    def system_prompt(self, value: str) -> None:
        self._system_prompt = value

    @property
    def session_context(self) -> str:
        return self._source.session_context if self._source is not None else self._session_context

    @session_context.setter
    def session_context(self, value: str) -> None:
        self._session_context = value

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the running call's view how far it got (``progress`` of ``total``, a short
        message); the notebook shows the latest while the call runs. Nothing outside a call."""
        from .progress import report_progress

        report_progress(progress, total, message)

    def resolve(
        self,
        path: str | os.PathLike[str],
        *,
        follow_final_symlink: bool = True,
        agent_folder_ok: bool = False,
    ) -> Path:
        """Shortcut for ``self.confinement.resolve`` (refuses paths outside the workspace)."""
        return self._workspace.resolve(
            path, follow_final_symlink=follow_final_symlink, agent_folder_ok=agent_folder_ok
        )

    def resolve_for_writing(
        self, path: str | os.PathLike[str], *, follow_final_symlink: bool = True
    ) -> Path:
        """``resolve`` plus the ``.git`` guard, and with a journal the journal's own guard: for
        paths a tool creates, changes or removes."""
        real = self._workspace.resolve_for_writing(path, follow_final_symlink=follow_final_symlink)
        if self.journal is not None:
            self.journal.refuse_if_protected(real, os.fspath(path))
        return real

    def relative(self, path: str | os.PathLike[str]) -> str:
        """A resolved path relative to the workspace, as tools report it."""
        return self._workspace.relative(path)

    def __repr__(self) -> str:
        return f"ToolContext(workspace={str(self.workspace)!r})"
