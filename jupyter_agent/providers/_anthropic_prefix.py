"""Keep each conversation's request prefix append-only, so its cache and thinking stay valid.

Current Claude models bind every thinking block to its prefix — the top-level ``system``, the
``tools`` and every message before it — and refuse a request whose prefix changed under a block
("bound to a different conversation"); any such change also makes the whole prompt cache miss.
The agent's prompt and tool list do change mid-conversation (a ``%agent_tools`` toggle, an MCP
server added, plan mode, a changed ``AGENTS.md``). ``PrefixKeeper`` sends such a change the way
the API documents (build-with-claude/mid-conversation-system-messages): the top-level ``system``
and ``tools`` stay as first sent, and a ``{"role": "system"}`` message appended where the change
happened carries the new prompt and ``tool_addition``/``tool_removal`` blocks (beta
``mid-conversation-tool-changes-2026-07-01``; tools defined inline under
``inline-tools-2026-09-15``). It is placed at the same point on every later request.

Where the model takes no such messages, or the conversation was rewritten (compaction), or the
model changed, the request goes as the agent built it, and every thinking block whose prefix (or
model) is no longer the one it was produced under is dropped before sending — the API would
refuse or ignore it. Blocks are tracked by signature, with a digest of the prefix they were
produced under (as sent, ``cache_control`` aside).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .model_facts import ModelFacts

TOOL_CHANGES_BETA = "mid-conversation-tool-changes-2026-07-01"
INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
#: Conversations whose layout is kept (the chats of a notebook share one provider).
MAX_LAYOUTS = 8
#: Block digests remembered (all forgotten at once past this).
MAX_DIGESTS = 200_000
#: Signatures remembered (oldest forgotten first).
MAX_BINDINGS = 4096
_THINKING = ("thinking", "redacted_thinking")

Message = dict[str, Any]
#: signature -> (model, digest of the prefix the block was produced under)
_BINDINGS: dict[str, tuple[str, str]] = {}
#: id(block) -> (the block, its digest)
_DIGESTS: dict[int, tuple[dict[str, Any], bytes]] = {}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _canonical(value: Any) -> bytes:
    return json.dumps(_plain(value), sort_keys=True, default=str).encode()


def _blocks(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _key(block: dict[str, Any]) -> str:
    return str(block.get("signature") if block.get("type") == "thinking" else block.get("data"))


@dataclass
class Layout:
    """One conversation: what its prefix was first sent with, and the changes placed since."""

    first: bytes
    system: str
    tools: list[dict[str, Any]]
    current_system: str
    current_tools: list[dict[str, Any]]
    #: System messages placed before the agent's ``messages[index]``, in order.
    insertions: list[Insertion] = field(default_factory=list)


@dataclass(frozen=True)
class Insertion:
    """A change placed in a conversation: where, what, and what it was placed after."""

    index: int
    message: Message
    #: The digest of ``messages[index - 1]`` when it was placed.
    after: bytes
    #: The prompt and tools before the change.
    system: str
    tools: list[dict[str, Any]]


@dataclass
class Rendered:
    """A request as it goes to the API."""

    system: str
    tools: list[dict[str, Any]]
    messages: list[Message]
    betas: list[str]
    #: How many thinking blocks were dropped (orphaned by a change, or of another model).
    dropped: int = 0


class PrefixKeeper:
    """The layouts of the latest conversations and the prefix each thinking block is bound to."""

    def __init__(self) -> None:
        self._layouts: list[Layout] = []
        # one per kernel, shared by every provider: the provider a changed model builds knows
        # what the old one's blocks were bound to
        self._bindings = _BINDINGS
        self._digests = _DIGESTS

    def render(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[Message],
        facts: ModelFacts,
        *,
        keep_layout: bool = True,
    ) -> Rendered:
        """The request to send for the agent's ``system``, ``tools`` and ``messages``
        (``keep_layout=False``: a one-off request, such as a summary, only has its orphaned
        thinking dropped)."""
        betas: list[str] = []
        layout = self._layout(system, tools, messages) if keep_layout else None
        changed = layout is not None and (
            system != layout.current_system or tools != layout.current_tools
        )
        if (
            layout is not None
            and changed
            and not self._place_change(layout, system, tools, messages, facts)
        ):
            # no mid-conversation changes on this model: the prefix is rewritten (and the
            # thinking bound to the old one dropped below)
            self._layouts.remove(layout)
            layout = self._new_layout(system, tools, messages)
        if layout is None:
            return self._checked(system, tools, list(messages), facts.model, betas)
        if not layout.insertions:  # nothing changed mid-conversation
            return self._checked(layout.system, layout.tools, messages, facts.model, betas)
        placed: list[Message] = []
        pending = list(layout.insertions)  # in index order, placed in the order they were made
        for position, message in enumerate(messages):
            while pending and pending[0].index <= position:
                placed.append(pending.pop(0).message)
            placed.append(message)
        placed.extend(insertion.message for insertion in pending)
        for inserted in (insertion.message for insertion in layout.insertions):
            for block in _blocks(inserted):
                if block.get("type") in ("tool_addition", "tool_removal"):
                    betas.append(TOOL_CHANGES_BETA)
                    if (block.get("tool") or {}).get("type") == "tool_definition":
                        betas.append(INLINE_TOOLS_BETA)
        return self._checked(layout.system, layout.tools, placed, facts.model, sorted(set(betas)))

    def _layout(
        self, system: str, tools: list[dict[str, Any]], messages: list[Message]
    ) -> Layout | None:
        if not messages:
            return None
        first = _canonical(messages[0])
        for layout in self._layouts:
            if layout.first == first:
                self._layouts.remove(layout)
                self._layouts.append(layout)
                self._prune(layout, messages)
                return layout
        return self._new_layout(system, tools, messages)

    def _prune(self, layout: Layout, messages: list[Message]) -> None:
        """Forget the changes placed after a message that is no longer there (a conversation
        loaded, cut back after a failed request, or rewritten): the prompt and tools go back to
        what they were before the first of them, and a change is placed anew if need be."""
        for position, insertion in enumerate(layout.insertions):
            index = insertion.index
            if index > len(messages) or self._digest_of(messages[index - 1]) != insertion.after:
                layout.current_system, layout.current_tools = insertion.system, insertion.tools
                del layout.insertions[position:]
                return

    def _new_layout(
        self, system: str, tools: list[dict[str, Any]], messages: list[Message]
    ) -> Layout:
        layout = Layout(_canonical(messages[0]), system, list(tools), system, list(tools))
        self._layouts.append(layout)
        del self._layouts[:-MAX_LAYOUTS]
        return layout

    def _place_change(
        self,
        layout: Layout,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[Message],
        facts: ModelFacts,
    ) -> bool:
        """Append a system message for the change after the last of ``messages``; ``False`` if
        the model cannot take one."""
        at = len(messages)
        if not facts.system_messages:
            return False
        tools_changed = tools != layout.current_tools
        if tools_changed and not facts.tool_changes:
            return False
        blocks: list[dict[str, Any]] = []
        if system != layout.current_system:
            blocks.append(
                {
                    "type": "text",
                    "text": "The system prompt has changed. From here on it reads:\n\n" + system
                    if system
                    else "The system prompt has been cleared.",
                }
            )
        if tools_changed:
            blocks += _tool_changes(layout, tools)
        if blocks:
            placed = Insertion(
                at,
                {"role": "system", "content": blocks},
                self._digest_of(messages[at - 1]),
                layout.current_system,
                layout.current_tools,
            )
            layout.insertions.append(placed)
        layout.current_system, layout.current_tools = system, list(tools)
        return True

    def _checked(
        self,
        system: str,
        tools: list[dict[str, Any]],
        messages: list[Message],
        model: str,
        betas: list[str],
    ) -> Rendered:
        """``messages`` without the thinking blocks whose prefix or model changed."""
        if not self._bindings or not any(
            block.get("type") in _THINKING and _key(block) in self._bindings
            for message in messages
            if message.get("role") == "assistant"
            for block in _blocks(message)
        ):
            return Rendered(system, tools, messages, betas)  # nothing bound to check
        digest = _start(system, tools)
        out: list[Message] = []
        dropped = 0
        for message in messages:
            digest.update(f"<{message.get('role')}>".encode())
            kept: list[dict[str, Any]] = []
            changed = False
            for block in _blocks(message):
                if block.get("type") in _THINKING:
                    bound = self._bindings.get(_key(block))
                    here = _digest_with(digest, block)
                    if bound is not None and bound != (model, here):
                        dropped += 1
                        changed = True
                        continue
                kept.append(block)
                digest.update(self._digest_of(block))
            if changed:
                if not kept:
                    kept = [{"type": "text", "text": "…"}]
                    digest.update(self._digest_of(kept[0]))
                out.append({**message, "content": kept})
            else:
                out.append(message)
        return Rendered(system, tools, out, betas, dropped)

    def _digest_of(self, block: dict[str, Any]) -> bytes:
        """A block's digest, computed once per block object (the agent keeps its blocks as they
        are; a changed block is a new object), so a check costs a hash per block, not a
        serialisation of the whole conversation."""
        known = self._digests.get(id(block))
        if known is not None and known[0] is block:
            return known[1]
        value = hashlib.sha256(_canonical(block)).digest()
        if len(self._digests) >= MAX_DIGESTS:
            self._digests.clear()
        self._digests[id(block)] = (block, value)
        return value

    def record(self, rendered: Rendered, model: str, reply: list[dict[str, Any]]) -> None:
        """Remember the prefix each thinking block of ``reply`` (to ``rendered``) is bound to."""
        if not any(block.get("type") in _THINKING for block in reply):
            return
        digest = _start(rendered.system, rendered.tools)
        for message in rendered.messages:
            digest.update(f"<{message.get('role')}>".encode())
            for block in _blocks(message):
                digest.update(self._digest_of(block))
        digest.update(b"<assistant>")
        for block in reply:
            if block.get("type") in _THINKING:
                self._bindings[_key(block)] = (model, _digest_with(digest, block))
            digest.update(self._digest_of(block))
        while len(self._bindings) > MAX_BINDINGS:
            del self._bindings[next(iter(self._bindings))]


def _start(system: str, tools: list[dict[str, Any]]) -> Any:
    digest = hashlib.sha256()
    digest.update(_canonical({"system": system, "tools": tools}))
    return digest


def _digest_with(digest: Any, block: dict[str, Any]) -> str:
    copy = digest.copy()
    copy.update(_canonical(block))
    return str(copy.hexdigest())


def _tool_changes(layout: Layout, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tool_removal``/``tool_addition`` blocks taking ``layout.current_tools`` to ``tools``."""
    now = {str(tool.get("name")): _plain(tool) for tool in layout.current_tools}
    wanted = {str(tool.get("name")): _plain(tool) for tool in tools}
    declared = {str(tool.get("name")): _plain(tool) for tool in layout.tools}
    blocks: list[dict[str, Any]] = []
    for name, tool in now.items():
        if wanted.get(name) != tool:
            blocks.append(
                {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}
            )
    for name, tool in wanted.items():
        if now.get(name) == tool:
            continue
        if declared.get(name) == tool:
            reference: dict[str, Any] = {"type": "tool_reference", "name": name}
        else:
            reference = {"type": "tool_definition", "definition": tool}
        blocks.append({"type": "tool_addition", "tool": reference})
    return blocks
