"""Running a child process so that it cannot hurt the user: the runner ``run_bash`` and git share.

* **Environment** (``safe_environment``): built from an allowlist, from which every variable whose
  name looks like a credential is removed (``ANTHROPIC_API_KEY``, ``*KEY*``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*``), plus settings that keep pagers,
  editors and prompts out of the way. ``SSH_AUTH_SOCK`` and the GPG agent are not on the list.
* **Process tree** (``run_command``): the child runs in a new session with stdin closed; at the
  deadline the whole process group and every descendant still linked to it get SIGTERM, a short
  grace, then SIGKILL; when the awaiting task is cancelled they get SIGKILL at once. Once the
  child exits, descendants still holding its output are stopped too (the outcome says so).
  Descendants that detach completely (double fork, ``setsid``) are out of reach of this runner
  alone: ``sandbox.py`` wraps the command so that they die with it.
* **Output**: read as a stream into a bounded head and tail, so a command printing gigabytes
  costs a few kilobytes, cut in the middle with a marker saying how much was left out.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import signal
import subprocess
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..cut_mark import cut_mark

#: Seconds between SIGTERM and SIGKILL when a process group is stopped.
TERMINATE_GRACE_S = 2.0
#: Seconds to keep reading after the shell exits while background children still hold the output.
LINGER_S = 1.0
READ_CHUNK_BYTES = 64 * 1024
_POLL_S = 0.02

#: Variables passed through from the parent environment (when not credential-like).
ALLOWED_VARIABLES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TEMP",
        "TMP",
        "HOSTNAME",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "CONDA_EXE",
        "CONDA_PYTHON_EXE",
        "CONDA_SHLVL",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONIOENCODING",
        "JAVA_HOME",
        "GOPATH",
        "GOROOT",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "NVM_DIR",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "JUPYTER_PATH",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }
)
ALLOWED_PREFIXES = ("LC_", "XDG_")
#: A variable whose name contains one of these (any case) never reaches a child process, and its
#: value is redacted from every tool result (``redact``): one rule for both.
SECRET_NAME_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
#: ``AUTH`` too, but not ``AUTHOR`` (``GIT_AUTHOR_NAME``) nor ``AUTHORITY``.
_AUTH_MARKER = re.compile("AUTH(?!OR)")

#: Set in every child: nothing may wait for a terminal, an editor or a pager.
NON_INTERACTIVE_VARIABLES: Mapping[str, str] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "SSH_ASKPASS": "true",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
    "PYTHONUNBUFFERED": "1",
    "TERM": "dumb",
    "NO_COLOR": "1",
}


def is_secret_name(name: str) -> bool:
    """True for a variable name that looks like it holds a credential."""
    upper = name.upper()
    return any(marker in upper for marker in SECRET_NAME_MARKERS) or (
        "AUTH" in upper and _AUTH_MARKER.search(upper) is not None
    )


def safe_environment(
    base: Mapping[str, str] | None = None, *, extra_names: Iterable[str] = ()
) -> dict[str, str]:
    """The environment for a child process: allowlisted, credential-free, non-interactive.

    ``base`` defaults to ``os.environ``. ``extra_names`` lets a caller pass a few more variables
    through (still subject to the credential filter).
    """
    source = os.environ if base is None else base
    extra = frozenset(extra_names)
    env = {
        name: value
        for name, value in source.items()
        if (name in ALLOWED_VARIABLES or name in extra or name.startswith(ALLOWED_PREFIXES))
        and not is_secret_name(name)
    }
    env.setdefault("PATH", os.defpath)
    env.update(NON_INTERACTIVE_VARIABLES)
    return env


# -- running a command with bounded output ----------------------------------------------------


class _BoundedText:
    """Keeps the first ``head_limit`` and the last ``tail_limit`` characters of a stream."""

    def __init__(self, head_limit: int, tail_limit: int) -> None:
        self._head_limit = head_limit
        self._tail_limit = tail_limit
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, *, final: bool = False) -> None:
        self._add(self._decoder.decode(data, final))

    def _add(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        room = self._head_limit - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
            if not text:
                return
        if len(text) >= self._tail_limit:
            self._tail = deque([text[-self._tail_limit :]]) if self._tail_limit else deque()
            self._tail_len = min(len(text), self._tail_limit)
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_limit:
            excess = self._tail_len - self._tail_limit
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_len -= len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_len -= excess

    def render(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        omitted = self.total - len(head) - len(tail)
        if omitted <= 0:
            return head + tail
        return f"{head}\n\n{cut_mark(omitted, self.total)}\n\n{tail}"


#: Room left in ``max_chars`` for the omission marker.
_MARKER_RESERVE = 120


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What ``run_command`` saw: capped, decoded output and how the process ended."""

    output: str
    exit_code: int | None
    timed_out: bool
    #: True when the command exited but left children holding its output, which were stopped.
    stopped_stragglers: bool

    def describe_exit(self) -> str:
        code = self.exit_code
        if code is None:
            return "Exit code: unknown"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"Exit code: {code} (killed by {name})"
        if 128 < code < 128 + 65:
            # A sandbox's init (or any shell) reports a child killed by signal N as 128 + N.
            try:
                name = signal.Signals(code - 128).name
            except ValueError:
                return f"Exit code: {code}"
            return f"Exit code: {code} (killed by {name}, as 128 + signal)"
        return f"Exit code: {code}"


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group (0 only probes); False if the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pgid reused by someone else's process: not ours to touch
        return False
    return True


#: A process as ``/proc`` shows it: (pid, start time) identifies it even if the pid is reused.
_ProcessId = tuple[int, int]


def _process_table() -> list[tuple[_ProcessId, int, int, bool]] | None:
    """``(identity, ppid, pgid, is_zombie)`` for every process, or ``None`` without ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    table = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid pgrp session tty tpgid flags ... starttime(22) ...";
        # comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 20:
            continue
        table.append(
            ((int(entry), int(fields[19])), int(fields[1]), int(fields[2]), fields[0] == b"Z")
        )
    return table


def _live_tree(leader: int) -> set[_ProcessId] | None:
    """Running processes in the leader's group or descended from the leader (``None``: no /proc).

    Descendants matter because a child may leave the group with ``setsid``; while its parent
    lives it can still be found through the parent links.
    """
    table = _process_table()
    if table is None:
        return None
    children: dict[int, list[_ProcessId]] = {}
    zombies = set()
    members = set()
    for identity, ppid, pgid, zombie in table:
        children.setdefault(ppid, []).append(identity)
        if zombie:
            zombies.add(identity)
        elif pgid == leader:
            members.add(identity)
    stack = [leader]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in members and child not in zombies:
                members.add(child)
                stack.append(child[0])
    return members


def _signal_tree(leader: int, known: set[_ProcessId], sig: int) -> None:
    """Signal the leader's group and each known process that is still the same process."""
    _signal_group(leader, sig)
    current = _live_tree(leader)
    alive = {identity for identity, _, _, zombie in (_process_table() or ()) if not zombie}
    for identity in known | (current or set()):
        if identity in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(identity[0], sig)


def kill_tree_now(leader: int) -> None:
    """SIGKILL the process group led by ``leader`` and all its descendants, at once."""
    _signal_tree(leader, _live_tree(leader) or set(), signal.SIGKILL)


async def _stop_tree(leader: int, grace_s: float) -> None:
    """SIGTERM the group and descendants, wait up to ``grace_s`` for them to die, then SIGKILL."""
    known = _live_tree(leader)
    if known is None:  # no /proc: the process group is all we can reach
        if _signal_group(leader, signal.SIGTERM):
            await asyncio.sleep(min(grace_s, 0.5))
            _signal_group(leader, signal.SIGKILL)
        return
    _signal_tree(leader, known, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while loop.time() < deadline:
        await asyncio.sleep(0.05)
        alive = {identity for identity, _, _, zombie in (_process_table() or ()) if not zombie}
        known = (known & alive) | (_live_tree(leader) or set())
        if not known:
            return
    _signal_tree(leader, known, signal.SIGKILL)


async def _drain(stream: asyncio.StreamReader, sink: _BoundedText) -> None:
    while chunk := await stream.read(READ_CHUNK_BYTES):
        sink.feed(chunk)
    sink.feed(b"", final=True)


async def run_command(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout_s: float,
    max_chars: int,
    grace_s: float = TERMINATE_GRACE_S,
) -> CommandOutcome:
    """Run ``argv`` in its own session with stdin closed; stdout and stderr interleaved.

    The output is capped at ``max_chars`` characters (cut in the middle, marked). At the timeout,
    or if the awaiting task is cancelled, the process group and the descendants are stopped.
    """
    keep = max(0, max_chars - _MARKER_RESERVE)
    sink = _BoundedText(keep // 2, keep - keep // 2)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )
    pgid = proc.pid  # start_new_session: the child leads its own session and group
    assert proc.stdout is not None
    reader = asyncio.create_task(_drain(proc.stdout, sink))
    timed_out = False
    stragglers = False
    try:
        try:
            async with asyncio.timeout(timeout_s):
                # Process.wait() also waits for the pipes to close, which background children
                # can hold open for ever; the return code shows the shell itself has exited.
                while proc.returncode is None and not reader.done():
                    # wakes as soon as the output ends (usually when the command exits)
                    await asyncio.wait({reader}, timeout=_POLL_S)
                if proc.returncode is None:
                    await proc.wait()
                done, _ = await asyncio.wait({reader}, timeout=LINGER_S)
                stragglers = not done
        except TimeoutError:
            timed_out = True
        if timed_out or stragglers:
            await _stop_tree(pgid, grace_s)
            # Every writer is gone now, unless one escaped into a session of its own.
            done, _ = await asyncio.wait({reader}, timeout=LINGER_S)
            if not done:
                reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while proc.returncode is None and loop.time() < deadline:
            await asyncio.sleep(_POLL_S)
    except BaseException:
        # Cancelled (user interrupt) or failed: nothing of the command may outlive us.
        kill_tree_now(pgid)
        reader.cancel()
        raise
    return CommandOutcome(sink.render(), proc.returncode, timed_out, stragglers)
