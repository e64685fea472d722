"""Bring kernel variables into a ``%%agent`` prompt by name: ``{{df}}``.

Prompts often contain code, JSON and f-strings, so the syntax has to leave all of that alone:
only ``{{name}}`` where ``name`` is a plain identifier *defined in the user's namespace* is
expanded; anything else — ``{{ not a name }}``, ``{x}``, ``${y}``, an unknown ``{{z}}`` — stays
exactly as typed. Each referenced variable is mentioned inline as `` `name` `` and described once,
within a size budget, in a block appended to the prompt — redacted (``tools/redact.py``) like a
tool result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...tools.redact import redact
from ..kernel.summarize import summarize, type_name

VARIABLE_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

#: Total characters of variable summaries one prompt may carry.
DEFAULT_PROMPT_BUDGET = 8000


@dataclass
class ExpandedPrompt:
    text: str
    variables: list[str] = field(default_factory=list)
    #: Secret values the redactor took out of the variables' summaries.
    redacted: int = 0


def expand_variables(
    prompt: str, namespace: Mapping[str, object], budget: int = DEFAULT_PROMPT_BUDGET
) -> ExpandedPrompt:
    """Replace ``{{name}}`` references to defined variables and append their summaries."""
    used: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in namespace:
            return match.group(0)
        if name not in used:
            used.append(name)
        return f"`{name}`"

    text = VARIABLE_REFERENCE.sub(replace, prompt)
    if not used:
        return ExpandedPrompt(prompt)
    per_variable = max(budget // len(used), 200)
    blocks = []
    for name in used:
        value = namespace[name]
        summary = summarize(value, per_variable)
        blocks.append(f'<variable name="{name}" type="{type_name(value)}">\n{summary}\n</variable>')
    appendix = "Variables from the user's Python session referenced above:\n" + "\n".join(blocks)
    appendix, redacted = redact(appendix)  # a value may hold a key: the one redactor
    return ExpandedPrompt(f"{text}\n\n{appendix}", used, redacted)
