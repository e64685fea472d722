"""The Messages API's per-model contract, as ONE table the tests' fake API enforces.

Each row says what one model accepts and does, with the documentation it comes from. The fake
(``fake_anthropic.py``) reads nothing else: which ``thinking.type`` and effort levels a request may
carry, the fields a model refuses (sampling parameters, an assistant prefill, a forced
``tool_choice``), the default ``display`` of thinking, whether mid-conversation system messages
and tool changes are accepted, whether thinking blocks are bound to the conversation's prefix,
the Models API answer (``ModelInfo``), and the error each refusal gets. ``test_model_contract.py``
checks this table against the installed SDK's literals and capability fields, so an SDK upgrade
that adds a model, a thinking type, an effort level or a capability fails until someone decides.

Sources (platform.claude.com/docs/en/…, read 2026-11-28):
- ``SONNET55``: models/sonnet-5-5/whats-new-sonnet-5-5 and …/migration-guide — adaptive thinking
  on by default (effort ``high``), ``thinking.type`` adaptive or between_tools (``disabled`` is a
  400), forced ``tool_choice`` is a 400, non-default sampling parameters and prefill are 400s,
  text between tool calls comes back in thinking blocks (``display`` default ``omitted``).
- ``MODELS``: models/overview and each model's overview page — windows (1M), max output (128K),
  thinking kind ("Adaptive (always on)" for Opus 5.5 and Fable 5.x), default effort.
- ``PRESERVED``: build-with-claude/preserved-thinking and …/prefix-checks — the models whose
  thinking blocks are bound to the prefix (Fable 5.2, Mythos 5.2, Fable 5.1, Mythos 5.1, Opus 5.5,
  Sonnet 5.5, Haiku 5.5), the 400 "bound to a different conversation", silent drops for blocks
  the reading model cannot read.
- ``MIDCONV``: build-with-claude/mid-conversation-system-messages — ``{"role": "system"}``
  messages (no beta) on Fable 5.1, Mythos 5.1, Fable 5, Mythos 5, Opus 5.5, Opus 4.8, Opus 5,
  Sonnet 5.5, Haiku 5.5 (not Sonnet 5); ``tool_addition``/``tool_removal`` blocks with the beta
  ``mid-conversation-tool-changes-2026-07-01`` (``inline-tools-2026-09-15`` for definitions).
- ``THINKING``: build-with-claude/thinking — ``display`` (``summarized``, ``omitted``; the
  ``updates`` value under ``thinking-display-updates-2026-08-18`` returns only the progress
  updates between tool calls), budgets (``enabled``) only on the pre-adaptive models.
- ``LEGACY``: models/overview (legacy and retired models); Claude 3.x and the May 2025 Claude 4
  snapshots are retired.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

#: Every ``thinking.type`` the API knows (``ThinkingTypes`` in the SDK).
THINKING_TYPES = ("adaptive", "between_tools", "disabled", "enabled")
#: Every effort level (``EffortCapability`` / ``OutputConfigParam.effort``).
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
#: ``display`` values: the SDK's two, and the beta one.
DISPLAYS = ("summarized", "omitted")
DISPLAY_UPDATES = "updates"
DISPLAY_UPDATES_BETA = "thinking-display-updates-2026-08-18"
TOOL_CHANGES_BETA = "mid-conversation-tool-changes-2026-07-01"
INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
#: The capability keys a ``ModelInfo.capabilities`` carries (``ModelCapabilities``).
CAPABILITY_KEYS = (
    "batch",
    "citations",
    "code_execution",
    "context_management",
    "effort",
    "image_input",
    "pdf_input",
    "server_tools",
    "structured_outputs",
    "thinking",
)
#: ``StopReason`` as the fake knows it.
STOP_REASONS = (
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
    "model_context_window_exceeded",
)
SAMPLING_FIELDS = ("temperature", "top_p", "top_k")

ALL_EFFORT = frozenset(EFFORT_LEVELS)
NO_XHIGH = frozenset({"low", "medium", "high", "max"})


@dataclass(frozen=True)
class ModelRule:
    """One model's contract."""

    id: str
    display_name: str
    line: str | None
    source: str
    lifecycle: str = "active"
    created_at: str = "2026-01-01T00:00:00Z"
    max_input_tokens: int = 1_000_000
    max_tokens: int = 128_000
    #: Accepted ``thinking.type`` values.
    thinking: frozenset[str] = frozenset({"adaptive"})
    #: What a request without ``thinking`` gets: ``"adaptive"`` or ``"disabled"``.
    default_thinking: str = "adaptive"
    effort: frozenset[str] = ALL_EFFORT
    default_effort: str | None = "high"
    default_display: str = "omitted"
    display_updates: bool = True
    system_messages: bool = True
    tool_changes: bool = True
    prefix_check: bool = True
    refuses_sampling: bool = True
    refuses_prefill: bool = True
    refuses_forced_tool_choice: bool = True
    #: Other models whose thinking blocks this one can read (besides its own).
    reads: frozenset[str] = frozenset()
    #: Its blocks replay on any model (Haiku 5.5).
    portable_thinking: bool = False
    image_input: bool = True
    pdf_input: bool = True
    deprecated_at: str | None = None
    retires_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_ADAPTIVE_ONLY = frozenset({"adaptive"})
_ADAPTIVE_OR_OFF = frozenset({"adaptive", "disabled"})
_BUDGET = frozenset({"enabled", "disabled"})
_EVERY_WAY = frozenset({"enabled", "adaptive", "disabled"})

_CURRENT = "SONNET55, MODELS, PRESERVED, MIDCONV"

RULES: tuple[ModelRule, ...] = (
    ModelRule("claude-fable-5-2", "Claude Fable 5.2", "fable", _CURRENT, thinking=_ADAPTIVE_ONLY),
    ModelRule("claude-mythos-5-2", "Claude Mythos 5.2", "mythos", _CURRENT),
    ModelRule(
        "claude-fable-5-1",
        "Claude Fable 5.1",
        "fable",
        _CURRENT,
        reads=frozenset({"claude-opus-5", "claude-opus-5-5"}),
    ),
    ModelRule("claude-mythos-5-1", "Claude Mythos 5.1", "mythos", _CURRENT),
    ModelRule("claude-opus-5-5", "Claude Opus 5.5", "opus", _CURRENT, default_effort="medium"),
    ModelRule(
        "claude-sonnet-5-5",
        "Claude Sonnet 5.5",
        "sonnet",
        _CURRENT,
        thinking=frozenset({"adaptive", "between_tools"}),
    ),
    ModelRule(
        "claude-haiku-5-5",
        "Claude Haiku 5.5",
        "haiku",
        "MODELS (haiku-5-5/overview, whats-new-haiku-5-5), PRESERVED, MIDCONV",
        thinking=_ADAPTIVE_OR_OFF,
        default_effort="medium",
        display_updates=False,
        refuses_sampling=False,
        refuses_prefill=False,
        refuses_forced_tool_choice=False,
        portable_thinking=True,
    ),
    ModelRule(
        "claude-sonnet-5",
        "Claude Sonnet 5",
        "sonnet",
        "MODELS (legacy: sonnet-5-5 migration guide), MIDCONV (not Sonnet 5)",
        thinking=_ADAPTIVE_OR_OFF,
        display_updates=False,
        system_messages=False,
        tool_changes=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
    ModelRule(
        "claude-fable-5",
        "Claude Fable 5",
        "fable",
        "MODELS, MIDCONV",
        display_updates=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
    ModelRule(
        "claude-mythos-5",
        "Claude Mythos 5",
        "mythos",
        "MODELS, MIDCONV",
        display_updates=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
    ModelRule(
        "claude-opus-5",
        "Claude Opus 5",
        "opus",
        "MODELS (opus-5/overview: legacy), MIDCONV",
        thinking=_ADAPTIVE_OR_OFF,
        display_updates=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
    ModelRule(
        "claude-opus-4-8",
        "Claude Opus 4.8",
        "opus",
        "MODELS, MIDCONV",
        thinking=_ADAPTIVE_OR_OFF,
        display_updates=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
    ModelRule(
        "claude-opus-4-7",
        "Claude Opus 4.7",
        "opus",
        "MODELS, THINKING (display omitted by default since Opus 4.7)",
        thinking=_ADAPTIVE_OR_OFF,
        default_thinking="disabled",
        display_updates=False,
        system_messages=False,
        tool_changes=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
    ModelRule(
        "claude-mythos-preview",
        "Claude Mythos Preview",
        "mythos",
        "MODELS, THINKING",
        thinking=_ADAPTIVE_OR_OFF,
        display_updates=False,
        system_messages=False,
        tool_changes=False,
        prefix_check=False,
        refuses_forced_tool_choice=False,
    ),
)


def _older(model_id: str, name: str, line: str, **kwargs: Any) -> ModelRule:
    """A pre-5 model: budgets, thinking off unless asked, summarized display, none of the new
    request rules."""
    settings: dict[str, Any] = {
        "thinking": _EVERY_WAY,
        "default_thinking": "disabled",
        "effort": NO_XHIGH,
        "default_display": "summarized",
        "display_updates": False,
        "system_messages": False,
        "tool_changes": False,
        "prefix_check": False,
        "refuses_sampling": False,
        "refuses_prefill": False,
        "refuses_forced_tool_choice": False,
        "created_at": "2025-09-29T00:00:00Z",
    }
    settings.update(kwargs)
    return ModelRule(model_id, name, line, "MODELS, THINKING (budgets)", **settings)


_FOUR_FIVE = {
    "thinking": _BUDGET,
    "max_input_tokens": 200_000,
    "max_tokens": 64_000,
    "effort": frozenset(),
    "default_effort": None,
}

RULES += (
    _older("claude-opus-4-6", "Claude Opus 4.6", "opus"),
    _older("claude-sonnet-4-6", "Claude Sonnet 4.6", "sonnet"),
    _older("claude-haiku-4-5", "Claude Haiku 4.5", "haiku", **_FOUR_FIVE),
    _older("claude-haiku-4-5-20251001", "Claude Haiku 4.5", "haiku", **_FOUR_FIVE),
    _older("claude-sonnet-4-5", "Claude Sonnet 4.5", "sonnet", **_FOUR_FIVE),
    _older("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "sonnet", **_FOUR_FIVE),
    _older(
        "claude-opus-4-5",
        "Claude Opus 4.5",
        "opus",
        **{**_FOUR_FIVE, "effort": frozenset({"low", "medium", "high"}), "default_effort": "high"},
    ),
    _older(
        "claude-opus-4-5-20251101",
        "Claude Opus 4.5",
        "opus",
        **{**_FOUR_FIVE, "effort": frozenset({"low", "medium", "high"}), "default_effort": "high"},
    ),
)

#: Retired (LEGACY): listed by the Models API, refused by the Messages API.
RETIRED = ("claude-3-7-sonnet-20250219", "claude-3-5-haiku-20241022", "claude-opus-4-20250514")
RULES += tuple(
    _older(
        model_id,
        model_id,
        "sonnet",
        lifecycle="retired",
        deprecated_at="2025-10-28T00:00:00Z",
        retires_at="2026-02-19T00:00:00Z",
        **_FOUR_FIVE,
    )
    for model_id in RETIRED
)

BY_ID: dict[str, ModelRule] = {rule.id: rule for rule in RULES}


def can_read(reader: ModelRule, producer: str) -> bool:
    """Whether ``reader`` reads a thinking block ``producer`` wrote (PRESERVED, model check)."""
    if producer == reader.id or producer in reader.reads:
        return True
    made_by = BY_ID.get(producer)
    return made_by is not None and made_by.portable_thinking


def model_info(rule: ModelRule, lifecycle: tuple[str, str | None] | None = None) -> dict[str, Any]:
    """The Models API's ``ModelInfo`` for ``rule`` (``lifecycle`` overrides the table's)."""

    def yes(value: bool) -> dict[str, bool]:
        return {"supported": value}

    stage, retires = lifecycle if lifecycle is not None else (rule.lifecycle, rule.retires_at)
    effort = {level: yes(level in rule.effort) for level in EFFORT_LEVELS}
    return {
        "type": "model",
        "id": rule.id,
        "display_name": rule.display_name,
        "created_at": rule.created_at,
        "lifecycle": stage,
        "deprecated_at": rule.deprecated_at
        or ("2026-10-01T00:00:00Z" if stage != "active" else None),
        "retires_at": retires,
        "line": rule.line,
        "max_input_tokens": rule.max_input_tokens,
        "max_tokens": rule.max_tokens,
        "capabilities": {
            "batch": yes(True),
            "citations": yes(True),
            "code_execution": yes(True),
            "context_management": {"supported": True},
            "effort": {"supported": bool(rule.effort), **effort},
            "image_input": yes(rule.image_input),
            "pdf_input": yes(rule.pdf_input),
            "server_tools": {
                "supported": True,
                "web_search": yes(True),
                "code_execution": yes(True),
            },
            "structured_outputs": yes(True),
            "thinking": {
                "supported": True,
                "types": {kind: yes(kind in rule.thinking) for kind in THINKING_TYPES},
            },
        },
    }


# -- how the API applies the table ---------------------------------------------------------------


class Refusal(Exception):
    """A request the API refuses: HTTP ``status``, error ``kind``, ``message``."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def _invalid(message: str) -> Refusal:
    return Refusal(400, "invalid_request_error", message)


def rule_for(model: object) -> ModelRule:
    """The row of a request's ``model``: an unknown or retired model is a 404, as the API does."""
    rule = BY_ID.get(str(model))
    if rule is None or rule.lifecycle == "retired":
        raise Refusal(404, "not_found_error", f"model: {model}")
    return rule


def thinking_setting(body: dict[str, Any], rule: ModelRule) -> tuple[str, str]:
    """The effective ``(thinking.type, display)``; refuses what the model does not take."""
    config = body.get("thinking")
    kind = rule.default_thinking if config is None else str(config.get("type"))
    if kind not in THINKING_TYPES:
        raise _invalid(f"thinking.type: Input tag '{kind}' found using 'type' does not match")
    if kind not in rule.thinking:
        if "adaptive" in rule.thinking:
            raise _invalid(
                f'"thinking.type.{kind}" is not supported for this model. Use '
                '"thinking.type.adaptive" and "output_config.effort" to control thinking '
                "behavior."
            )
        raise _invalid(f'"thinking.type.{kind}" is not supported for this model.')
    display = (config or {}).get("display") or rule.default_display
    return kind, str(display)


def request_refusal(
    body: dict[str, Any], betas: set[str], rule: ModelRule, *, continuing: bool = False
) -> None:
    """Raise the ``Refusal`` the API answers ``body`` with under ``rule`` (first rule broken).
    ``continuing``: the last message is a reply that stopped with ``pause_turn``, sent back for
    the model to go on (documented), not a prefill."""
    kind, display = thinking_setting(body, rule)
    if display == DISPLAY_UPDATES:
        if DISPLAY_UPDATES_BETA not in betas:
            raise _invalid(f"thinking.display: 'updates' requires the beta {DISPLAY_UPDATES_BETA}")
        if not rule.display_updates:
            raise _invalid("thinking.display: 'updates' is not supported for this model")
    elif display not in DISPLAYS:
        raise _invalid("thinking.display: Input should be 'summarized' or 'omitted'")
    effort = (body.get("output_config") or {}).get("effort")
    if effort is not None:
        if not rule.effort:
            raise _invalid("output_config.effort: effort is not supported for this model")
        if effort not in rule.effort:
            raise _invalid(f"output_config.effort: '{effort}' is not supported for this model")
    for name in SAMPLING_FIELDS:
        if name in body and rule.refuses_sampling:
            raise _invalid(f"`{name}` is not supported for this model; omit it")
    choice = (body.get("tool_choice") or {}).get("type")
    if choice in ("any", "tool") and (rule.refuses_forced_tool_choice or kind == "enabled"):
        raise _invalid(
            "tool_choice: forced tool use is not supported for this model; use 'auto' or 'none'"
        )
    messages = body.get("messages") or []
    last_is_assistant = bool(messages) and messages[-1].get("role") == "assistant"
    if last_is_assistant and rule.refuses_prefill and not continuing:
        raise _invalid(
            "This model does not support assistant message prefill. The conversation must end "
            "with a user message."
        )
    system_message_refusal(body, betas, rule)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def system_message_refusal(body: dict[str, Any], betas: set[str], rule: ModelRule) -> None:
    """MIDCONV: where ``{"role": "system"}`` messages may stand and what they may hold."""
    messages = body.get("messages") or []
    known = {str(tool.get("name")) for tool in body.get("tools") or []}
    for i, message in enumerate(messages):
        if message.get("role") != "system":
            continue
        if not rule.system_messages:
            raise _invalid("role 'system' is not supported on this model")
        if i == 0:
            raise _invalid(
                "messages.0: use the top-level 'system' parameter for the initial system prompt"
            )
        before = messages[i - 1]
        if before.get("role") == "assistant" and any(
            b.get("type") == "tool_use" for b in _blocks(before)
        ):
            raise _invalid(
                f"messages.{i}: a system message cannot come between tool_use blocks and their "
                "tool_result blocks"
            )
        blocks = _blocks(message)
        if not blocks:
            raise _invalid(f"messages.{i}: all messages must have non-empty content")
        for j, block in enumerate(blocks):
            where = f"messages.{i}.content.{j}"
            kind = block.get("type")
            if kind == "text":
                if not block.get("text"):
                    raise _invalid(f"{where}.text: text content blocks must be non-empty")
                continue
            if kind not in ("tool_addition", "tool_removal"):
                raise _invalid(f"{where}.type: unexpected block type {kind!r} in system message")
            if not rule.tool_changes:
                raise _invalid(f"{where}: tool changes are not supported for this model")
            if TOOL_CHANGES_BETA not in betas:
                raise _invalid(f"{where}: {kind} requires the beta {TOOL_CHANGES_BETA}")
            tool = block.get("tool") or {}
            if tool.get("type") == "tool_definition":
                if kind != "tool_addition":
                    raise _invalid(f"{where}.tool: a tool_removal names a tool by reference")
                if INLINE_TOOLS_BETA not in betas:
                    raise _invalid(f"{where}.tool: tool_definition requires {INLINE_TOOLS_BETA}")
                known.add(str((tool.get("definition") or {}).get("name")))
            elif tool.get("type") == "tool_reference":
                if tool.get("name") not in known:
                    raise _invalid(f"{where}.tool.name: no tool named {tool.get('name')!r}")
            else:
                raise _invalid(f"{where}.tool.type: invalid")
    # the other roles still alternate, system messages aside
    others = [m.get("role") for m in messages if m.get("role") != "system"]
    for i in range(1, len(others)):
        if others[i] == others[i - 1]:
            raise _invalid("messages: roles must alternate between 'user' and 'assistant'")


# -- thinking blocks bound to model and prefix (PRESERVED) ---------------------------------------

SIGNATURE_PREFIX = "sig1"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _canonical(value: Any) -> bytes:
    return json.dumps(_plain(value), sort_keys=True).encode()


def prefix_hasher(body: dict[str, Any]) -> Any:
    """A running hash over what a thinking block is bound to: the top-level system and tools."""
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    digest = hashlib.sha256()
    digest.update(_canonical({"system": system or [], "tools": body.get("tools") or []}))
    return digest


def signature(producer: str, prefix: Any, block: dict[str, Any]) -> str:
    """The signature the fake gives a thinking block: its model and a digest of its prefix."""
    digest = prefix.copy()
    digest.update(_canonical({k: v for k, v in block.items() if k != "signature"}))
    return f"{SIGNATURE_PREFIX}.{producer}.{digest.hexdigest()[:32]}"


def sign_reply(body: dict[str, Any], model: str, content: list[dict[str, Any]]) -> None:
    """Sign the thinking blocks of a reply to ``body`` in place (``redacted_thinking`` too)."""
    digest = prefix_hasher(body)
    for message in body.get("messages") or []:
        digest.update(f"<{message.get('role')}>".encode())
        for block in _blocks(message):
            digest.update(_canonical(block))
    digest.update(b"<assistant>")
    for block in content:
        if block.get("type") == "thinking":
            block["signature"] = signature(model, digest, block)
        elif block.get("type") == "redacted_thinking":
            block["data"] = signature(model, digest, {"type": "redacted_thinking"})
        digest.update(_canonical(block))


def thinking_check(body: dict[str, Any], rule: ModelRule) -> list[str]:
    """The prefix and model checks of every thinking block sent back. Returns the positions
    (``"i.j"``) of blocks dropped silently (a model that cannot read them); raises the 400 of a
    bad signature or, on a model with the prefix check, a block whose prefix changed."""
    dropped: list[str] = []
    digest = prefix_hasher(body)
    for i, message in enumerate(body.get("messages") or []):
        digest.update(f"<{message.get('role')}>".encode())
        for j, block in enumerate(_blocks(message)):
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                sent = str(block.get("signature" if kind == "thinking" else "data") or "")
                parts = sent.split(".")
                if len(parts) != 3 or parts[0] != SIGNATURE_PREFIX:
                    raise _invalid(
                        f"messages.{i}.content.{j}: Invalid `signature` in `{kind}` block"
                    )
                producer = parts[1]
                if not can_read(rule, producer):
                    dropped.append(f"{i}.{j}")
                else:
                    plain = block if kind == "thinking" else {"type": "redacted_thinking"}
                    if signature(producer, digest, plain) != sent and rule.prefix_check:
                        raise _invalid(
                            f"messages.{i}.content.{j}: The block is bound to a different "
                            "conversation: the system prompt, the tools or an earlier message "
                            "changed after the block was produced"
                        )
            digest.update(_canonical(block))
    return dropped


def render_thinking(content: list[dict[str, Any]], kind: str, display: str) -> list[dict[str, Any]]:
    """A scripted reply as the request's thinking setting returns it (THINKING, SONNET55).

    A scripted block with ``"progress": True`` is the short update the model writes between
    tool calls; others are reasoning. ``disabled`` returns no thinking; ``between_tools`` only the
    updates; ``omitted`` empties every block's text, ``updates`` the reasoning's only.
    """
    rendered: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") != "thinking":
            rendered.append(dict(block))
            continue
        progress = bool(block.get("progress"))
        if kind == "disabled" or (kind == "between_tools" and not progress):
            continue
        text = block.get("thinking", "")
        if display == "omitted" or (display == DISPLAY_UPDATES and not progress):
            text = ""
        rendered.append({"type": "thinking", "thinking": text, "signature": ""})
    return rendered
