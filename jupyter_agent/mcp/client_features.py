"""What an MCP client offers servers besides calling their tools: forms, roots, sampling.

A server may ask the *user* something mid-call (**elicitation**: a small form), ask which folders
it may work in (**roots**: only those the user configured for that server — without any, the
client does not declare the capability, so a server's own command-line directories stand), or ask
the client's model for a completion (**sampling**). The SDK's ``ClientSession`` takes a callback
for each; this module turns the SDK's requests into our own small, typed questions (``Form``,
``SamplingRequest``) and answers through ``ClientHooks``, which whoever hosts the servers fills
in: the notebook shows a form in the calling cell and asks before sampling; a script leaves them
empty, and then a form is declined and sampling refused — never answered on the user's behalf.

The SDK is imported only inside the callbacks' bodies (this module loads without ``mcp``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext
    from mcp.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        ListRootsResult,
    )

FieldKind = Literal["string", "number", "integer", "boolean", "choice"]


@dataclass(frozen=True, slots=True)
class FormField:
    """One question of a form (a top-level property of the server's requested schema)."""

    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    #: The server's default (SEP-1034): the form starts with it, and an answer keeps it.
    default: object = None
    #: The allowed values of a ``choice``.
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Form:
    """A question from a server to the user."""

    server: str
    message: str
    fields: tuple[FormField, ...]

    def initial(self) -> dict[str, object]:
        """The answers the form starts with: every default the server gave."""
        return {f.name: f.default for f in self.fields if f.default is not None}


#: The user's answer: the fields' values, ``"decline"`` or ``"cancel"``.
FormAnswer = dict[str, object] | Literal["decline", "cancel"]
FormAsker = Callable[[Form], Awaitable[FormAnswer]]


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """A server's request for a completion, in plain terms, for the user to approve."""

    server: str
    system_prompt: str
    #: (role, text) of each message; non-text parts are named, not sent.
    messages: tuple[tuple[str, str], ...]
    max_tokens: int


#: Answers a sampling request with the completion's text, or raises ``PermissionError`` (the
#: user said no) / any exception (the model failed).
Sampler = Callable[[SamplingRequest], Awaitable[str]]


@dataclass
class ClientHooks:
    """How the user is reached for a server's questions; empty means nobody can be."""

    #: Shows a server's form and waits for the answer (``None``: forms are declined).
    ask: FormAsker | None = None
    #: Completes a sampling request after the user approved it (``None``: refused).
    sample: Sampler | None = None
    #: Shows the OAuth "Authorize" link (``None``: a server that needs it fails to connect
    #: with one line saying so).
    open_authorization: Callable[[str], Awaitable[None]] | None = None


# -- elicitation -------------------------------------------------------------------------------


def form_from_schema(server: str, message: str, schema: dict[str, Any]) -> Form:
    """The form for a requested schema (flat: strings, numbers, booleans, enums)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or ()) if isinstance(schema, dict) else set()
    fields: list[FormField] = []
    for name, spec in (properties or {}).items():
        if not isinstance(spec, dict):
            continue
        options = _options(spec)
        kind: FieldKind
        if options:
            kind = "choice"
        elif spec.get("type") in ("number", "integer", "boolean"):
            kind = spec["type"]
        else:
            kind = "string"
        fields.append(
            FormField(
                name=str(name),
                kind=kind,
                title=str(spec.get("title") or name),
                description=str(spec.get("description") or ""),
                required=name in required,
                default=spec.get("default"),
                options=options,
            )
        )
    return Form(server, message, tuple(fields))


def _options(spec: dict[str, Any]) -> tuple[str, ...]:
    if isinstance(spec.get("enum"), list):
        return tuple(str(value) for value in spec["enum"])
    choices = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(choices, list):
        return tuple(str(c["const"]) for c in choices if isinstance(c, dict) and "const" in c)
    return ()


def coerce_answer(form: Form, answer: dict[str, object]) -> dict[str, object]:
    """The answer as the schema's types, defaults filled in for fields left out.

    Raises ``ValueError`` naming a field whose value does not fit (or a required one missing).
    """
    values = form.initial() | {k: v for k, v in answer.items() if v is not None and v != ""}
    result: dict[str, object] = {}
    for f in form.fields:
        if f.name not in values:
            if f.required:
                raise ValueError(f"{f.title} is required")
            continue
        value = values[f.name]
        result[f.name] = _coerce(f, value)
    return result


def _coerce(f: FormField, value: object) -> object:
    try:
        if f.kind == "boolean":
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "y", "on")
            return bool(value)
        if f.kind == "integer":
            if isinstance(value, bool):
                raise ValueError
            return int(str(value).strip()) if not isinstance(value, int) else value
        if f.kind == "number":
            if isinstance(value, bool):
                raise ValueError
            return value if isinstance(value, int | float) else float(str(value).strip())
    except ValueError:
        raise ValueError(f"{f.title} must be a {f.kind}, not {value!r}") from None
    text = str(value)
    if f.kind == "choice" and text not in f.options:
        raise ValueError(f"{f.title} must be one of {', '.join(f.options)}, not {text!r}")
    return text


def elicitation_callback(
    server: str, hooks: ClientHooks
) -> Callable[[ClientRequestContext, ElicitRequestParams], Awaitable[ElicitResult | ErrorData]]:
    """The SDK callback that puts a server's form question to the user through ``hooks``."""

    async def elicit(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        from mcp.types import ElicitRequestFormParams, ElicitResult

        if not isinstance(params, ElicitRequestFormParams) or hooks.ask is None:
            return ElicitResult(action="decline")  # a URL request, or nobody to ask
        form = form_from_schema(server, params.message, dict(params.requested_schema))
        answer = await hooks.ask(form)
        if answer == "decline" or answer == "cancel":
            return ElicitResult(action=answer)
        try:
            content = coerce_answer(form, answer)
        except ValueError:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=content)  # type: ignore[arg-type]

    return elicit


# -- roots and sampling ------------------------------------------------------------------------


def roots_callback(
    roots: Sequence[Path],
) -> Callable[[ClientRequestContext], Awaitable[ListRootsResult | ErrorData]]:
    """The SDK callback that lists ``roots`` (absolute folders) to the server."""
    listed = [(path.resolve().as_uri(), path.name) for path in roots]

    async def list_roots(context: ClientRequestContext) -> ListRootsResult | ErrorData:
        from mcp.types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=uri, name=name) for uri, name in listed])  # type: ignore[arg-type]

    return list_roots


def sampling_callback(
    server: str, hooks: ClientHooks
) -> Callable[
    [ClientRequestContext, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]
]:
    async def sample(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        from mcp.types import CreateMessageResult, ErrorData, TextContent

        if hooks.sample is None:
            return ErrorData(code=-1, message="sampling is not available in this session")
        request = SamplingRequest(
            server=server,
            system_prompt=params.system_prompt or "",
            messages=tuple((m.role, _text_of(m.content)) for m in params.messages),
            max_tokens=params.max_tokens,
        )
        try:
            text = await hooks.sample(request)
        except PermissionError as exc:
            return ErrorData(code=-1, message=f"the user declined the sampling request ({exc})")
        except Exception as exc:
            return ErrorData(code=-32603, message=f"sampling failed: {type(exc).__name__}: {exc}")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=text),
            model="jupyter-agent",
            stop_reason="endTurn",
        )

    return sample


def _text_of(content: object) -> str:
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        kind = getattr(part, "type", "")
        texts.append(str(getattr(part, "text", "")) if kind == "text" else f"[{kind} omitted]")
    return "\n".join(texts)


def session_callbacks(
    server: str, hooks: ClientHooks, roots: Sequence[Path] = ()
) -> dict[str, Any]:
    """The ``ClientSession`` keyword arguments that answer servers through ``hooks``.

    The roots callback is given only with ``roots``: the SDK declares the roots capability
    exactly when it has one, and a server told no roots keeps the folders it was started with.
    """
    callbacks = {
        "elicitation_callback": elicitation_callback(server, hooks),
        "sampling_callback": sampling_callback(server, hooks),
    }
    if roots:
        callbacks["list_roots_callback"] = roots_callback(roots)
    return callbacks
