"""``run_command`` at its deadline: SIGTERM first, then SIGKILL for a command that ignores it.

Proven by what the command saw and how it ended, not by how long it took: the command logs every
signal it can catch and goes on, so only SIGKILL (uncatchable) can end it, and the return code
says which signal did. Run without the sandbox, where bubblewrap's own death would end it first.
"""

from __future__ import annotations

import secrets
import signal
from pathlib import Path

from process_watch import wait_until_none_run

from jupyter_agent.tools.guard.processes import run_command, safe_environment

CATCHABLE = ("TERM", "INT", "HUP", "QUIT", "USR1", "USR2", "ALRM", "PIPE")


async def test_a_command_that_ignores_sigterm_gets_sigkill_after_it(tmp_path: Path) -> None:
    marker = f"stubborn-{secrets.token_hex(4)}"
    traps = " ".join(f"trap 'echo {name} >> signals.log' {name};" for name in CATCHABLE)
    command = f"{traps} echo before; while :; do sleep 0.1; done # {marker}"
    outcome = await run_command(
        ["bash", "-c", command],
        cwd=tmp_path,
        env=safe_environment(),
        timeout_s=0.3,
        max_chars=10_000,
    )
    assert outcome.timed_out and "before" in outcome.output
    # asked politely first (the group and each process of the tree get it: maybe twice)
    assert set((tmp_path / "signals.log").read_text().split()) == {"TERM"}
    assert outcome.exit_code == -signal.SIGKILL  # then ended by the one it cannot catch
    assert not await wait_until_none_run(marker)
