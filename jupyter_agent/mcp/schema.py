"""An MCP tool's input schema, checked the way a stranger's schema must be: bounded.

The registry checks a built-in tool's arguments with ``jsonschema`` on the event loop, which is
fine for schemas we wrote. A server's schema is someone else's, and two of ``jsonschema``'s
defaults then hurt:

- **It fetches.** A ``$ref`` to ``http://…`` or ``file:///dev/zero`` is retrieved with
  ``urllib`` (past ``web_fetch``'s address guard, with no timeout). Here the validator is built
  on an empty ``referencing.Registry()``: a ``$ref`` resolves inside the schema (and to the JSON
  Schema metaschemas ``jsonschema`` ships) or is an error result; nothing is retrieved.
- **It freezes.** ``pattern`` and ``patternProperties`` are matched with ``re``, which holds the
  GIL for as long as a catastrophic backtrack takes (``^(a+)+$`` against ``"a" * 40 + "!"``), so
  not even a worker thread would leave the loop free. Here those keywords (and
  ``additionalProperties``, which matches the same patterns) match with the ``regex`` module,
  which releases the GIL (``concurrent=True``) and stops at a timeout: the call's deadline.

The check runs in a worker thread (``check``), awaited under the call's deadline: the loop
keeps running while a large value is checked, and a check that overruns is an error result. A
process would bound even pure-Python work (``uniqueItems`` over many objects) but costs a spawn
and a pipe per server; the registry's size caps on arguments keep that work small, so a thread
plus a regex engine with a timeout is the lighter sufficient choice.

One case stays on the loop, as the registry's own checks do, because it cannot take long: a
schema of at most ``INLINE_SCHEMA_BYTES`` made only of keywords that cost a comparison or two per
value (``INLINE_KEYWORDS``: types named, properties, ranges, lengths, an ``enum`` of at most
``INLINE_MAX_VALUES`` plain values, a plain ``const`` — no ``pattern``, ``$ref``, combinator,
``uniqueItems`` or Draft 3 type-schema), with arguments that are a flat object of at most
``INLINE_MAX_VALUES`` plain values (integers below 2**64). Its worst case is a few milliseconds
(``tests/mcp/test_schema_inline.py`` pins it); the worker's two thread wake-ups cost about
0.1 ms on every call of every such tool, a tenth of a stdio round trip.

``unevaluatedProperties`` together with ``patternProperties`` is the one combination whose
patterns ``jsonschema`` matches internally with ``re``: such a schema is refused when the server
is added (``bounded_validator`` raises ``ValueError``).

A server's tools are also capped in number (``MAX_TOOLS_PER_SERVER``) and in the size of their
schemas (``MAX_SCHEMA_BYTES_PER_SERVER``): every request to the model carries them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import math
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import referencing
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema import validators as jsonschema_validators
from jsonschema.protocols import Validator

from ..errors import SchemaTimeout

#: Tools one server may offer; more, and the server is refused (every request carries them all).
MAX_TOOLS_PER_SERVER = 256
#: Bytes of JSON (name, description and input schema) of one server's tools, all together.
MAX_SCHEMA_BYTES_PER_SERVER = 512 * 1024
#: How many schema violations one error lists, and how many are looked at to choose them.
MAX_REPORTED_ERRORS = 3
MAX_COLLECTED_ERRORS = 100
MAX_MESSAGE_CHARS = 500

#: The largest schema (its JSON) that may be checked on the loop, and the most values.
INLINE_SCHEMA_BYTES = 8 * 1024
INLINE_MAX_VALUES = 64
#: What an inline check's patterns may take, were one to be reached (none can be).
INLINE_BACKSTOP_S = 0.1
#: Keywords whose check is a comparison or two per value, or that check nothing at all.
INLINE_KEYWORDS = frozenset(
    {
        # what they check
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
        # annotations (no format checker is given, so "format" asserts nothing)
        "title", "description", "default", "examples", "$schema", "$id", "$comment",
        "deprecated", "readOnly", "writeOnly", "format", "contentMediaType", "contentEncoding",
    }
)  # fmt: skip
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None)})
#: The dialect of a schema that names none.
_DEFAULT_DIALECT = jsonschema_validators.Draft202012Validator

# A few threads, separate from the loop's default executor (DNS lookups use that one): a check
# abandoned at its deadline must not starve anything else.
_workers = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="mcp-schema")
_deadline = threading.local()


def _search(pattern: str, text: str) -> bool:
    import regex  # the [mcp] extra's: imported when a server's schema is first used

    remaining = getattr(_deadline, "at", None)
    timeout = None if remaining is None else max(0.001, remaining - time.monotonic())
    try:
        return regex.search(pattern, text, timeout=timeout, concurrent=True) is not None
    except TimeoutError:
        raise SchemaTimeout(f"matching the pattern {pattern[:100]!r}") from None


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema_exceptions.ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, str(instance)):
        yield jsonschema_exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema_exceptions.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[jsonschema_exceptions.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = {
        key
        for key in instance
        if key not in properties and not any(_search(pattern, key) for pattern in patterns)
    }
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        shown = ", ".join(repr(extra) for extra in sorted(extras, key=str))
        if patterns:
            yield jsonschema_exceptions.ValidationError(
                f"{shown} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                + ", ".join(repr(pattern) for pattern in sorted(patterns))
            )
        else:
            yield jsonschema_exceptions.ValidationError(
                f"Additional properties are not allowed ({shown} "
                f"{'was' if len(extras) == 1 else 'were'} unexpected)"
            )


_OVERRIDES = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}
_bounded_classes: dict[type[Validator], type[Validator]] = {}


def _uses(schema: object, keyword: str) -> bool:
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            if keyword in node:
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


def _nested_dialect(schema: Mapping[str, Any]) -> bool:
    """Whether an object below the root names a dialect (``"$schema": "…"``): ``jsonschema``
    checks such a subschema with that dialect's stock class, without this module's overrides."""
    pending: list[object] = [value for key, value in schema.items() if key != "$schema"]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            if isinstance(node.get("$schema"), str):
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


def bounded_validator(schema: Mapping[str, Any]) -> Validator:
    """A validator for ``schema`` that fetches nothing and matches patterns with a timeout.

    Raises ``ValueError`` for a schema that is not valid JSON Schema, or that could only be
    checked unbounded.
    """
    plain = dict(schema)
    base = jsonschema_validators.validator_for(plain, default=_DEFAULT_DIALECT)
    try:
        base.check_schema(plain)
    except jsonschema_exceptions.SchemaError as exc:
        raise ValueError(f"invalid input schema: {exc.message}") from None
    if _nested_dialect(plain):
        raise ValueError(
            "its schema switches JSON Schema dialect inside itself (a nested $schema), which "
            "would check that part without the bounds (patterns with no time limit)"
        )
    if _uses(plain, "unevaluatedProperties") and _uses(plain, "patternProperties"):
        raise ValueError(
            "its schema combines unevaluatedProperties with patternProperties, which cannot be "
            "checked within a time limit"
        )
    bounded = _bounded_classes.get(base)
    if bounded is None:
        bounded = jsonschema_validators.extend(base, _OVERRIDES)  # type: ignore[no-untyped-call]
        _bounded_classes[base] = bounded
    return bounded(plain, registry=referencing.Registry())


def checks_inline(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` is small and made only of ``INLINE_KEYWORDS`` (see the module)."""
    if schema_bytes("", "", schema) > INLINE_SCHEMA_BYTES:
        return False
    if jsonschema_validators.validator_for(schema, default=_DEFAULT_DIALECT) is (
        jsonschema_validators.Draft3Validator
    ):
        return False  # its "type" may hold schemas, its "required" is a boolean: not worth it
    pending: list[object] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, Mapping) or not INLINE_KEYWORDS.issuperset(node):
            return False
        kind = node.get("type", "object")
        if not isinstance(kind, str) and not (
            isinstance(kind, list) and all(isinstance(name, str) for name in kind)
        ):
            return False  # a type that is a schema (Draft 3) would be checked, unbounded
        choices = node.get("enum", [])
        if not isinstance(choices, list) or len(choices) > INLINE_MAX_VALUES:
            return False  # each value is compared with each choice, in Python
        if not all(type(choice) in _PLAIN_VALUES for choice in [*choices, node.get("const")]):
            return False  # a nested choice is compared (and quoted) all the way down
        properties = node.get("properties", {})
        if not isinstance(properties, Mapping):
            return False
        pending.extend(properties.values())
        for keyword in ("additionalProperties", "items"):
            if keyword in node:
                sub = node[keyword]
                pending.extend(sub if isinstance(sub, list) else [sub])
    return True


def _flat_and_few(arguments: Mapping[str, Any]) -> bool:
    return len(arguments) <= INLINE_MAX_VALUES and all(
        type(value) in _PLAIN_VALUES and (type(value) is not int or -_BIG < value < _BIG)
        for value in arguments.values()
    )


#: Integers past this are checked in the worker: arithmetic on thousands of digits is not free.
_BIG = 2**64


async def check(
    validator: Validator, arguments: dict[str, Any], timeout: float, *, inline: bool = False
) -> str | None:
    """What is wrong with ``arguments`` (one line), or None; checked in a worker thread, or on
    the loop when ``inline`` (the schema passed ``checks_inline``) and the arguments are a flat
    object of few plain values.

    Never raises for bad arguments or a bad schema: an unresolvable ``$ref``, a bad pattern and
    a check that outlives ``timeout`` are all reasons, returned like a violation.
    """
    if inline and _flat_and_few(arguments):
        # a backstop only: no pattern can be reached from a schema that passed checks_inline
        return _problems(validator, arguments, time.monotonic() + INLINE_BACKSTOP_S)
    deadline = time.monotonic() + timeout if math.isfinite(timeout) else None
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str | None] = loop.create_future()

    def work() -> None:
        # the answer goes straight to the loop (one wake-up), not through run_in_executor's
        # chained futures; a check the caller stopped waiting for is dropped
        try:
            problem = _problems(validator, arguments, deadline)
        except BaseException as exc:  # _problems returns reasons; this is a bug, passed on
            loop.call_soon_threadsafe(_settle, answer, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, answer, problem, None)

    job = _workers.submit(work)
    try:
        async with asyncio.timeout(None if deadline is None else deadline - time.monotonic()):
            return await answer
    except TimeoutError:
        job.cancel()  # still queued behind busy workers: it never starts
        return f"checking them against the server's schema took longer than {timeout:g} s"
    except asyncio.CancelledError:
        job.cancel()
        raise


def _settle(
    answer: asyncio.Future[str | None], problem: str | None, error: BaseException | None
) -> None:
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(problem)


def _problems(
    validator: Validator, arguments: dict[str, Any], deadline: float | None
) -> str | None:
    import regex  # the [mcp] extra's: imported when a server's schema is first used

    _deadline.at = deadline
    try:
        collected = list(itertools.islice(validator.iter_errors(arguments), MAX_COLLECTED_ERRORS))
        errors = sorted(collected, key=jsonschema_exceptions.relevance)
    except SchemaTimeout as exc:
        return f"checking them against the server's schema took longer than the call may ({exc})"
    except referencing.exceptions.Unresolvable as exc:
        return (
            "the server's schema refers to something outside itself "
            f"({_short(str(exc))}), which is never fetched"
        )
    except regex.error as exc:
        return f"the server's schema has a pattern that is not a valid regular expression: {exc}"
    except (Exception, RecursionError) as exc:
        return f"they could not be checked ({type(exc).__name__}); send plain JSON values"
    finally:
        _deadline.at = None
    if not errors:
        return None
    parts = []
    for error in errors[:MAX_REPORTED_ERRORS]:
        where = "/".join(str(part) for part in error.absolute_path)
        message = _short(error.message)
        parts.append(f"{where}: {message}" if where else message)
    if len(errors) > MAX_REPORTED_ERRORS:
        parts.append("and more")
    return "; ".join(parts)


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "…"


def schema_bytes(name: str, description: str, input_schema: Mapping[str, Any]) -> int:
    """The size one tool adds to every request (its JSON, as sent)."""
    try:
        text = json.dumps(
            {"name": name, "description": description, "input_schema": input_schema},
            ensure_ascii=False,
        )
    except (TypeError, ValueError, RecursionError):
        return MAX_SCHEMA_BYTES_PER_SERVER + 1
    return len(text.encode("utf-8"))
