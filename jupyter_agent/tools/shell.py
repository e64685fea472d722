"""``run_bash``: run a shell command in the workspace without letting it hurt the user.

A prompt-injected model may ask for anything, so the command runs fenced in:

* inside a sandbox (``sandbox.py``): with bubblewrap, in its own PID namespace and ``/proc`` with
  the filesystem read-only except the workspace, so no process it starts outlives the call and
  nothing outside the workspace is written, the credential stores hidden, and no network unless
  ``ToolContext.shell_network`` (``AgentMagics.shell_network``) is on; elsewhere under a
  subreaper that kills every descendant when the call ends (the result says the isolation is
  reduced);
* in the workspace, with stdin closed and no controlling terminal, with a credential-free
  environment and a deadline that stops the whole process tree (``processes.py``);
* with its output capped and cut in the middle, the cut marked.
"""

from __future__ import annotations

import shutil
from typing import Any, ClassVar

from .base import BuiltinTool, ToolFailure
from .guard.processes import run_command, safe_environment
from .guard.sandbox import REDUCED_ISOLATION_NOTE, probe_off_the_loop, sandboxed

#: The most characters a ``run_bash`` result may hold, status lines included.
MAX_RESULT_CHARS = 10_000
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000


def find_bash() -> str:
    return shutil.which("bash") or "/bin/bash"


class RunBashTool(BuiltinTool):
    """``run_bash``: ``bash -c COMMAND`` in the workspace, fenced in (see the module docstring)."""

    name = "run_bash"
    description = (
        "Run a bash command in the workspace folder and return its combined stdout and stderr "
        "(interleaved) followed by the exit code. Stdin is closed, so interactive commands fail "
        "instead of waiting; there is no terminal. Output longer than 10,000 characters is cut "
        "in the middle (the cut is marked), so redirect big outputs to a file and read parts of "
        f"it. The command and all its child processes are killed at the timeout (default "
        f"{DEFAULT_TIMEOUT_MS // 1000} s, at most {MAX_TIMEOUT_MS // 1000} s), and no "
        "process it starts outlives the call (background processes included: start servers "
        "elsewhere). Only the workspace is writable; /tmp is private to the call. Credentials "
        "are not available, and there is no network unless the user turned it on."
    )
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The bash command to run, e.g. 'ls -la' or 'python script.py'.",
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
                "description": (
                    f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, "
                    f"maximum {MAX_TIMEOUT_MS})."
                ),
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    destructive = True

    async def execute(self, args: dict[str, object]) -> str:
        command = args["command"]
        if not isinstance(command, str) or not command.strip():
            raise ToolFailure("The command is empty")
        if "\x00" in command:
            raise ToolFailure("The command contains a NUL character")
        timeout_ms = args.get("timeout_ms", DEFAULT_TIMEOUT_MS)
        if not isinstance(timeout_ms, int) or not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
            raise ToolFailure(f"timeout_ms must be an integer from 1 to {MAX_TIMEOUT_MS}")
        timeout_s = timeout_ms / 1000
        budget = MAX_RESULT_CHARS - 300  # room for the status lines around the output
        await probe_off_the_loop()
        sandbox = sandboxed(
            [find_bash(), "-c", command],
            self.context.workspace,
            network=bool(getattr(self.context, "shell_network", False)),
        )
        outcome = await run_command(
            sandbox.argv,
            cwd=self.context.workspace,
            env=safe_environment(),
            timeout_s=timeout_s,
            max_chars=budget,
        )
        output = outcome.output if outcome.output else "(no output)"
        if outcome.timed_out:
            raise ToolFailure(
                f"The command timed out after {timeout_s:g} s; it and all its child processes "
                f"were stopped. Output before the timeout:\n{output}"
            )
        result = f"{output.rstrip(chr(10))}\n\n{outcome.describe_exit()}"
        if outcome.stopped_stragglers:
            result += (
                "\n(Background processes that kept the output open after the command finished "
                "were stopped: no process outlives a run_bash call.)"
            )
        if not sandbox.full_isolation:
            result += "\n" + REDUCED_ISOLATION_NOTE
        return result
