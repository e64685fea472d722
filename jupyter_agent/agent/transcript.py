"""The conversation as a Markdown transcript: what ``Agent.session_context`` returns.

``save_session_context`` writes it to a file so a later session (or a person) can pick up where
this one stopped; it is also what ``%agent history`` shows. Tool calls are summarised (name,
arguments, the first line of the result) rather than copied in full.
"""

from __future__ import annotations

import json
from typing import Any

from .conversation import content_blocks

#: How much of a tool's arguments and result the transcript keeps.
ARGUMENTS_PREVIEW = 200
RESULT_PREVIEW = 200


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def render_transcript(messages: list[dict[str, Any]]) -> str:
    """Markdown for ``messages`` (Anthropic Messages format); ``""`` for an empty conversation."""
    calls: dict[str, str] = {}
    sections: list[str] = []
    for message in messages:
        role = message.get("role")
        lines: list[str] = []
        for block in content_blocks(message):
            kind = block.get("type")
            if kind == "text":
                lines.append(str(block.get("text", "")).strip())
            elif kind == "tool_use":
                arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
                calls[str(block.get("id"))] = str(block.get("name"))
                lines.append(
                    f"- tool call `{block.get('name')}` {_shorten(arguments, ARGUMENTS_PREVIEW)}"
                )
            elif kind == "tool_result":
                name = calls.get(str(block.get("tool_use_id")), "tool")
                status = "error" if block.get("is_error") else "result"
                preview = _shorten(_result_text(block), RESULT_PREVIEW)
                lines.append(f"- {status} of `{name}`: {preview}")
        if not lines:
            continue
        if role == "assistant":
            heading = "## Assistant"
        elif any(b.get("type") == "text" for b in content_blocks(message)):
            heading = "## User"
        else:
            heading = "## Tool results"
        sections.append(heading + "\n\n" + "\n\n".join(line for line in lines if line))
    return "\n\n".join(sections) + ("\n" if sections else "")
