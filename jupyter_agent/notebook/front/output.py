"""How the magics print a line or a table of output: through ``inert.visible``, always.

Chat names, paths, tool names, MCP servers' words and settings in what the magics print come
from files, servers and the model; one function prints them all, so no command can forget to
escape them. (Its own module because the ``%agent`` and ``%agent_tools`` commands both print.)
"""

from __future__ import annotations

import sys

from ..inert import visible


def say(text: str, *, error: bool = False) -> None:
    """Print a line or table of output. Chat names, paths, tool names, MCP servers' words and
    settings in it come from files, servers and the model: ``visible`` shows their control and
    invisible characters as escapes, so none can steer the terminal."""
    print(visible(text), file=sys.stderr if error else sys.stdout)
