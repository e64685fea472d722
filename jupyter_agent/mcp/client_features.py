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

import re
import unicodedata
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
    #: The field looks like it asks for a secret (a password, an API key, a token), which the
    #: MCP specification forbids servers to ask for in a form: the user is warned, the field
    #: masked and the answer kept out of every record (``looks_secret``).
    secret: bool = False


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
                secret=looks_secret(str(name), spec),
            )
        )
    return Form(server, message, tuple(fields))


#: Words in a field's name, title or description that say it asks for a secret (matched on the
#: ``_normalised`` text: case-folded, compatibility forms and look-alike letters made plain).
_SECRET_WORDS = re.compile(
    "|".join(
        (
            r"(?<![a-z])pass(?:word|wd|phrase|code)?(?![a-z])",
            r"pass(?:word|wd|phrase|code)",  # dbpassword
            r"(?<![a-z])pw(?:d)?(?![a-z])",
            r"secret|token|credential|cookie|bearer|mnemonic",
            r"(?:api|private|access|secret|ssh|gpg|pgp|signing|encryption|license|licence|"
            r"recovery|openai|anthropic|github|stripe|aws|google|azure|auth)[\s_-]?key",
            r"(?<![a-z])sk-",  # "OpenAI key (sk-...)"
            r"(?<![a-z])pat(?![a-z])|personal[\s_-]?access",
            r"session[\s_-]?(?:id|key)",
            r"(?:seed|recovery|secret)[\s_-]?(?:phrase|words?|code)",
            r"(?<![a-z])(?:pin|cvv|cvc|cvv2|otp|totp|ssn|iban|2fa|mfa)(?![a-z])",
            r"card[\s_-]?number|account[\s_-]?number|routing[\s_-]?number",
            r"one[\s_-]?time[\s_-]?(?:code|password|pin)",
            r"auth(?:entication|orization)?[\s_-]?code|authenticator",
            r"(?:verification|security|sms|login|sign[\s_-]?in|digit)[\s_-]?code",
            # other languages: German, French, Spanish, Portuguese, Italian, Dutch, Russian,
            # Chinese, Japanese, Korean
            r"passwort|kennwort|mot[\s_-]?de[\s_-]?passe|contrase(?:n|ñ)a|senha|"
            r"parola[\s_-]?d[\s'_-]?ordine|wachtwoord|пароль|密码|密碼|口令|パスワード|비밀번호",
        )
    )
)

#: Look-alike letters (Cyrillic, Greek) that NFKC keeps apart from the Latin ones they copy.
_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "ѕ": "s",
        "і": "i",
        "ј": "j",
        "ԁ": "d",
        "ԛ": "q",
        "ԝ": "w",
        "α": "a",
        "β": "b",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ω": "w",
    }
)
#: Characters that show nothing (zero-width, soft hyphen, joiners, bidi controls): dropped.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\ufeff]"
)


def _normalised(text: str) -> str:
    """``text`` as compared with ``_SECRET_WORDS``: NFKC (full-width and other compatibility
    forms made plain), invisible characters dropped, case folded, look-alike letters Latin. A
    word in Cyrillic (пароль) is kept when it is all Cyrillic: it is mapped in a second copy."""
    plain = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    return f"{plain} {plain.translate(_CONFUSABLES)}"


def looks_secret(name: str, spec: dict[str, Any]) -> bool:
    """True for a form field that looks like it asks for a secret: its name, title or
    description says password, API key, token, secret, PIN, a one-time code, a seed phrase…
    (in a few languages, whatever the case, full-width or look-alike letters), or its schema
    says ``format: password`` or ``writeOnly``. The MCP specification forbids it ("Servers MUST
    NOT use form mode elicitation to request sensitive information such as passwords, API keys,
    access tokens, or payment credentials", client/elicitation, 2025-11-25; "MUST NOT use
    elicitation to request sensitive information", 2025-06-18)."""
    if spec.get("format") == "password" or spec.get("writeOnly") is True:
        return True
    if spec.get("type") in ("number", "integer", "boolean") or _options(spec):
        return False  # a secret is typed text ("max tokens" is a number, not a token)
    words = " ".join(str(spec.get(key) or "") for key in ("title", "description"))
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)  # apiKey -> api Key
    return bool(_SECRET_WORDS.search(_normalised(f"{name} {spaced} {words}")))


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
