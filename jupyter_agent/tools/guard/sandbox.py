"""The sandbox a model's command runs in: bubblewrap where it works, a subreaper elsewhere.

``run_bash`` runs whatever the model wrote, so the command must not outlive its call, write
outside the workspace or find the user's key. On Linux with bubblewrap (Debian's ``bubblewrap``,
``bwrap``) — what Claude Code uses there — the command runs with:

* ``--unshare-pid`` and its own ``/proc``: the command sees only its own processes, so
  ``/proc/<kernel pid>/environ`` (which holds ``ANTHROPIC_API_KEY``) is out of sight, and when
  the call ends the namespace's first process dies, and with it every process in the namespace —
  ``setsid -f``, double forks and ``nohup … &`` included (``--die-with-parent`` makes a killed
  ``bwrap`` take its namespace along);
* the filesystem read-only (``--ro-bind / /``) but for the workspace, a private ``/tmp``, and the
  places of ``hidden_paths`` hidden — the usual credential stores (``~/.ssh``, ``~/.aws``,
  ``~/.netrc``, …) and Jupyter's runtime, data and config folders wherever the environment puts
  them — also inside the workspace (they are mounted over after it);
* every capability dropped (these machines often run as root: a root process with capabilities
  could remount its view writable);
* no network (``--unshare-net``: only its own loopback) unless the user turns it on
  (``AgentMagics.shell_network``, for ``pip install`` or ``curl``): with the network, a command
  could reach the kernel's own ports or carry what it read elsewhere.

Where ``bwrap`` is missing or cannot create namespaces (some containers, macOS), the command runs
under a **subreaper**: a small Python parent marked ``PR_SET_CHILD_SUBREAPER`` (Linux) that
adopts every orphaned descendant and kills them all when the command ends. It keeps the
no-orphans promise on Linux, but not the read-only filesystem, the hidden ``/proc``, the hidden
credential stores nor the cut network: the result of each call says that the isolation is
reduced. Choose explicitly with the environment
variable ``JUPYTER_AGENT_SANDBOX`` = ``bwrap`` | ``subreaper`` (default: ``bwrap`` when it works).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .hidden_paths import HIDDEN_HOME_PATHS as HIDDEN_HOME_PATHS  # the list, also from here
from .hidden_paths import hidden_paths

SANDBOX_ENV_VAR = "JUPYTER_AGENT_SANDBOX"

REDUCED_ISOLATION_NOTE = (
    "[sandbox: bubblewrap is not available here, so this command ran under a subreaper: no "
    "process it started outlives the call, but the filesystem outside the workspace (credential "
    "stores included) and other processes' /proc entries were not hidden from it, and it had "
    "the network even with AgentMagics.shell_network off]"
)

#: The subreaper: run the command, then kill every descendant it adopted, then exit with the
#: command's status. Kept to the standard library so that it starts fast.
_SUBREAPER = r"""
import ctypes, os, signal, sys, time
PR_SET_CHILD_SUBREAPER = 36
try:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
except Exception:
    pass
child = os.fork()
if child == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
signal.signal(signal.SIGTERM, lambda *_: None)
status = 0
while True:
    try:
        pid, code = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if pid == child:
        status = os.waitstatus_to_exitcode(code)
        break
def descendants():
    me, found = str(os.getpid()), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if stat[stat.rfind(b")") + 2 :].split()[1].decode() == me:
                found.append(int(entry))
    return found
for _ in range(50):
    left = descendants()
    if not left:
        break
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break
    time.sleep(0.01)
sys.exit(status if status >= 0 else 128 - status)
"""


@dataclass(frozen=True, slots=True)
class Sandboxed:
    """A command wrapped in the sandbox, and whether the isolation is the full one."""

    argv: list[str]
    full_isolation: bool


@functools.cache
def bwrap_works() -> bool:
    """Whether ``bwrap`` is installed and can create the namespaces we use (checked once)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    try:
        probe = subprocess.run(
            [bwrap, *_BASE_OPTIONS, "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


_BASE_OPTIONS = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",
    "--cap-drop", "ALL",
)  # fmt: skip


def _chosen() -> str:
    choice = os.environ.get(SANDBOX_ENV_VAR, "").strip().lower()
    if choice in ("bwrap", "subreaper"):
        return choice
    return "bwrap" if bwrap_works() else "subreaper"


def _hidden_options(workspace: Path, *, within_only: bool = False) -> list[str]:
    """bwrap options hiding every place of ``hidden_paths`` (that exists), to come after the
    workspace's own bind so that a store inside the workspace is hidden too. A place that is the
    workspace or one of its parents is left alone; with ``within_only``, so is every place
    outside the workspace (a sandbox that does not show them anyway)."""
    options: list[str] = []
    done: list[str] = []
    root = str(workspace)
    for path in hidden_paths():  # shortest first: a place inside one already hidden is skipped
        if not os.path.isabs(path) or _contains(path, root):
            continue  # never hide the workspace itself
        if within_only and not _contains(root, path):
            continue
        if any(_contains(parent, path) for parent in done):
            continue
        if os.path.islink(path):
            continue  # its target is on the list too (hidden_paths adds real paths)
        if os.path.isdir(path):
            options += ["--tmpfs", path]
        elif os.path.isfile(path):
            options += ["--ro-bind", "/dev/null", path]
        else:
            continue
        done.append(path)
    return options


def _contains(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def sandboxed(argv: Sequence[str], workspace: Path, *, network: bool = False) -> Sandboxed:
    """``argv`` wrapped so that it runs in the sandbox with ``workspace`` writable, without
    network unless ``network``."""
    if _chosen() == "bwrap" and shutil.which("bwrap") is not None:
        root = str(workspace)
        options = [
            *_BASE_OPTIONS,
            *([] if network else ["--unshare-net"]),
            # after the /tmp tmpfs, so that a workspace under it shows
            "--bind", root, root,
            # after the workspace, so that a store inside it (the workspace is ~) stays hidden
            *_hidden_options(workspace),
            "--chdir", root,
        ]  # fmt: skip
        return Sandboxed([shutil.which("bwrap") or "bwrap", *options, "--", *argv], True)
    return Sandboxed([sys.executable, "-S", "-c", _SUBREAPER, *argv], False)


#: System folders a program needs to start (its loader and libraries), bound read-only.
_SYSTEM_FOLDERS = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/etc/ld.so.cache",
    "/etc/alternatives",
)


async def probe_off_the_loop() -> None:
    """Run bubblewrap's one-time check (``bwrap_works``: it starts ``bwrap`` and waits for it) in
    a worker thread, so that the first sandboxed tool call of a kernel does not hold the event
    loop for as long as ``bwrap`` takes to start (a fraction of a second on a busy machine)."""
    if bwrap_works.cache_info().currsize == 0:
        await asyncio.to_thread(bwrap_works)


def reader_sandbox_works() -> bool:
    """Whether ``reader_sandbox`` wraps commands (bubblewrap chosen and working)."""
    return _chosen() == "bwrap" and shutil.which("bwrap") is not None


def reader_sandbox(
    argv: Sequence[str], workspace: Path | None, extra: Sequence[str] = ()
) -> list[str]:
    """``argv`` wrapped so that it sees only the workspace (read-only) and what it needs to run.

    For the searches (ripgrep, the Python regex worker): they walk the workspace by path, so a
    folder swapped for a symlink mid-walk would lead them outside. In this sandbox there *is* no
    outside — a symlink to ``/home/you`` or ``/tmp/x`` finds nothing. ``extra`` are further
    read-only paths the program needs (its binary, an interpreter's prefix). With ``workspace``
    None it sees no workspace at all (``web_fetch``'s page converter). No network either way.
    Without bubblewrap the command is returned as it is: the searches then run the Python
    backend, which walks by descriptors and needs no sandbox to stay inside (``search``).
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None or not reader_sandbox_works():
        return list(argv)
    options = [
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        "--dev", "/dev",
        "--proc", "/proc",
    ]  # fmt: skip
    for path in (*_SYSTEM_FOLDERS, *extra):
        options += ["--ro-bind-try", path, path]
    if workspace is not None:
        root = str(workspace)
        options += ["--ro-bind", root, root, *_hidden_options(workspace, within_only=True)]
        options += ["--chdir", root]
    return [bwrap, *options, "--", *argv]


async def start_reader(argv: Sequence[str], **options: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec(*argv, **options)`` in a process group of its own, and
    that a cancellation cannot cut short.

    ``bwrap`` killed during its set-up can leave the namespace's first process behind (its
    ``--die-with-parent`` not yet armed), holding our pipes open: asyncio, cancelled while it
    starts a process, kills it and waits for those pipes for ever. So the start is always
    completed, and ``end_reader`` kills the whole group — that first process included, and with it
    everything in the namespace.
    """
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(*argv, start_new_session=True, **options)
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # however often the caller is cancelled meanwhile (a timeout, then an interrupt): a
        # cancellation that reached the start itself would leave asyncio waiting for the process
        while not spawn.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({spawn})
        if not spawn.cancelled() and spawn.exception() is None:
            with contextlib.suppress(asyncio.CancelledError):
                await end_reader(spawn.result())  # the kill itself comes before any wait
        raise


async def end_reader(process: asyncio.subprocess.Process) -> None:
    """Kill a process ``start_reader`` started, with its group, and reap it in bounded time."""
    if process.returncode is None:
        # start_new_session: its pid is the group's id. Only while it is not known to be reaped:
        # once it is, that number is free, and may since lead someone else's group. Signals go
        # by os.kill, never Process.kill(): that polls first (Popen.send_signal), and a reader
        # the group kill has just ended would be reaped behind asyncio's child watcher, which
        # then reports 255 ("Unknown child process") and may leave a wait on it pending.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)
    if process.stdin is not None:
        process.stdin.close()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(process.wait()), 1)
    # Reaped, the process's pipe transport may still wait for its pipes' end; asyncio closes it
    # only then, and a loop closed before that finds it open: its __del__ then warns "Event loop
    # is closed". Nobody reads a reader's pipes after this: close it now.
    transport = getattr(process, "_transport", None)
    if process.returncode is not None and transport is not None:
        transport.close()


def git_sandbox(
    argv: Sequence[str], *, workspace: Path, work_tree: Path, git_dir: Path, home: Path
) -> list[str]:
    """git run in the same kind of sandbox as ``run_bash``: only the repository's git folder
    writable, the rest read-only, its own PID namespace and ``/proc``, no network.

    git_commit ignores configuration the model could plant, but with ``run_bash`` enabled the
    model can edit ``.git/config`` itself (it lies in the workspace); whatever git then runs —
    a clean filter, say — runs here, unable to write outside the repository or to read the
    kernel's environment. Without bubblewrap the command is returned as it is.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None or _chosen() != "bwrap":
        return list(argv)
    options = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        # after the /tmp tmpfs, so that a repository under /tmp is seen: the work tree read-only,
        # the git folder writable (index, objects), the temporary HOME with the identity
        "--ro-bind", str(work_tree), str(work_tree),
        "--bind", str(git_dir), str(git_dir),
        "--ro-bind", str(home), str(home),
        # after the work tree, so that a store inside it stays hidden
        *_hidden_options(workspace),
        "--chdir", str(workspace),
    ]  # fmt: skip
    return [bwrap, *options, "--", *argv]
