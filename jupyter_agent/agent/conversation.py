"""Keeping ``Agent.messages`` a conversation the Messages API will accept.

The API is strict: roles alternate starting with ``user``; every ``tool_use`` in an assistant
message is answered by a ``tool_result`` with the same id at the *start* of the very next user
message; no message and no text block may be empty. A notebook user interrupts cells, loses the
network and runs out of turns, so the agent repairs the list after anything unusual instead of
trusting that each chat ended cleanly. Everything here works in place on plain dicts.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

Message = dict[str, Any]
Block = dict[str, Any]

#: The content of a ``tool_result`` for a call that never ran (no other reason known).
NOT_RUN = "not run: the conversation was interrupted before this tool call ran"
#: The content of a ``tool_result`` for a call the user interrupted.
INTERRUPTED = "interrupted by the user"


#: What the Messages API accepts as a ``tool_use`` id.
VALID_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def fresh_tool_id() -> str:
    """A new ``tool_use`` id, valid for the API and unique for all practical purposes."""
    return "toolu_ja_" + secrets.token_hex(12)


def normalise_ids(messages: list[Message]) -> set[str]:
    """Give every ``tool_use`` a valid id unique in ``messages``; returns the ids in use.

    Ids another provider produced (``call_0:1``, say) or that repeat an earlier call's id are
    replaced by fresh ones, and the ``tool_result`` blocks of the next user message follow. Works
    in place; messages it does not change are left as they are.
    """
    used: set[str] = set()
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        renamed: dict[str, str] = {}
        blocks = message["content"]
        for position, block in enumerate(blocks):
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            call_id = str(block.get("id") or "")
            if not VALID_TOOL_ID.match(call_id) or call_id in used:
                new_id = fresh_tool_id()
                renamed.setdefault(call_id, new_id)
                blocks[position] = {**block, "id": new_id}
                call_id = new_id
            used.add(call_id)
        if renamed and index + 1 < len(messages) and messages[index + 1].get("role") == "user":
            follower = messages[index + 1]
            follower["content"] = [
                {**b, "tool_use_id": renamed[str(b.get("tool_use_id"))]}
                if b.get("type") == "tool_result" and str(b.get("tool_use_id")) in renamed
                else b
                for b in content_blocks(follower)
            ]
    return used


def content_blocks(message: Message) -> list[Block]:
    """The message's content as a list of blocks (a string becomes one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def tool_use_ids(message: Message) -> list[str]:
    """Ids of the ``tool_use`` blocks of an assistant message, in order."""
    if message.get("role") != "assistant":
        return []
    return [str(b["id"]) for b in content_blocks(message) if b.get("type") == "tool_use"]


def tool_result(tool_use_id: str, content: str, *, is_error: bool = False) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def _is_empty_block(block: Block) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def repair(messages: list[Message], *, missing_result: str = NOT_RUN) -> bool:
    """Make ``messages`` valid to send (after a user message is added); returns True if changed.

    - drops empty text blocks, misplaced blocks (``tool_use`` in a user message, ``tool_result``
      in an assistant message), messages left without content, and leading assistant messages;
    - merges consecutive messages of the same role (e.g. pending tool results and a new prompt);
    - answers every ``tool_use`` left without a ``tool_result`` with an error result
      (``missing_result``), puts the results first and in the order of the calls, and drops
      ``tool_result`` blocks that answer no call of the previous assistant message.

    The result may end with either role; ``add_user_text`` then appends or merges the prompt.
    A valid conversation is left as it is, its dicts included (so a provider can tell that the
    next request extends the previous one).
    """
    original = [dict(m) for m in messages]
    current = original
    # dropping an orphan result can empty a message, which changes the neighbours: repeat
    for _ in range(len(messages) + 2):
        repaired = _repair_once(current, missing_result)
        if repaired == current:
            break
        current = repaired
    if current == original:
        return False
    messages[:] = current
    return True


def _repair_once(messages: list[Message], missing_result: str) -> list[Message]:
    cleaned: list[Message] = []
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        misplaced = "tool_result" if role == "assistant" else "tool_use"
        blocks = [
            b
            for b in content_blocks(message)
            if not _is_empty_block(b) and b.get("type") != misplaced
        ]
        if not blocks:
            continue
        if not cleaned and role == "assistant":
            continue
        if cleaned and cleaned[-1]["role"] == role:
            cleaned[-1]["content"] = [*cleaned[-1]["content"], *blocks]
        else:
            cleaned.append({"role": role, "content": blocks})

    result: list[Message] = []
    for index, message in enumerate(cleaned):
        if message["role"] == "assistant":
            result.append(message)
            continue
        previous = cleaned[index - 1] if index > 0 else None
        expected = tool_use_ids(previous) if previous is not None else []
        result.append(_answer_calls(message, expected, missing_result))
    if result and result[-1]["role"] == "assistant":
        pending = tool_use_ids(result[-1])
        if pending:
            result.append(_answer_calls({"role": "user", "content": []}, pending, missing_result))

    return result


def _answer_calls(message: Message, expected: list[str], missing_result: str) -> Message:
    """The user message with a result for each of ``expected`` first, in order; others after."""
    results: dict[str, Block] = {}
    others: list[Block] = []
    for block in message["content"]:
        if block.get("type") == "tool_result":
            block_id = str(block.get("tool_use_id"))
            if block_id in expected and block_id not in results:
                results[block_id] = block
            # a result for a call that is not in the previous message would be refused: drop it
        else:
            others.append(block)
    ordered = [
        results.get(call_id) or tool_result(call_id, missing_result, is_error=True)
        for call_id in expected
    ]
    return {"role": "user", "content": [*ordered, *others]}


def add_user_content(messages: list[Message], blocks: list[Block]) -> None:
    """Append ``blocks`` as a user message, merging into a trailing user message if there is one."""
    if messages and messages[-1].get("role") == "user":
        messages[-1]["content"] = [*content_blocks(messages[-1]), *blocks]
    else:
        messages.append({"role": "user", "content": list(blocks)})


def add_user_text(messages: list[Message], text: str) -> None:
    add_user_content(messages, [{"type": "text", "text": text}])
