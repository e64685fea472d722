"""A stdio MCP server's guard: the server's whole process group dies with the kernel.

A kernel that exits runs ``process.kill_leftovers``; a kernel that is SIGKILLed
(``shutdown_kernel(now=True)``, the out-of-memory killer, a crash) runs nothing, and its servers
— often ``npx`` or ``uv`` with the real server as *their* child — would live on. Linux can signal
a process when its parent dies (``PR_SET_PDEATHSIG``), but only the process itself, not what it
started, and "parent" means the *thread* that forked it (the session's loop thread). So the
server is started through this small script, run by path with ``python -I -S`` (no site, no
``jupyter_agent`` import: it starts in milliseconds)::

    python -I -S _guard.py PARENT_PID -- COMMAND ARGS...

It asks for SIGTERM when the thread that started it dies, checks that ``PARENT_PID`` is still its
parent (the kernel may have died before the request), starts the server as its child in the
same process group (the SDK made it a session leader), lets go of the server's stdin and stdout,
and waits. On SIGTERM — the parent died, or the SDK ended the group — it SIGKILLs the group, so
the server and anything it started end together; when the server exits, it exits the same way.
Elsewhere than Linux it simply becomes the server (``execvp``).
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def _ask_for_sigterm_when_parent_dies() -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _end_group(signum: int, frame: object) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)  # ends this guard too
    os._exit(128 + signum)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: _guard.py PARENT_PID -- COMMAND ARGS...\n")
        return 2
    parent, command = int(argv[0]), argv[2:]
    if not sys.platform.startswith("linux") or not _ask_for_sigterm_when_parent_dies():
        os.execvp(command[0], command)
    signal.signal(signal.SIGTERM, _end_group)
    if os.getppid() != parent:  # the kernel died before the request was made
        return 1
    try:
        child = os.fork()
    except OSError as exc:
        sys.stderr.write(f"could not start {command[0]}: {exc}\n")
        return 127
    if child == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"could not start {command[0]}: {exc}\n")
            os._exit(127)
    # the server holds its stdin and stdout alone: the SDK sees EOF when it exits
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    # what the server started (if anything outlived it) the SDK ends with the group on close
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
