"""Secrets never reach the model: the redactor every tool result passes through.

``ToolRegistry.call`` is the one door every tool result leaves by — the built-in tools, the
notebook's kernel tools, MCP tools and the user's own ``@tool`` functions — so redaction happens
there, once, before the model, the conversation or the saved record sees the text. What is
replaced by ``[redacted: NAME]``:

* the value of every environment variable whose name looks like a credential (the one rule
  ``processes.is_secret_name`` that also keeps them out of ``run_bash``'s environment:
  ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
  ``*PASSWORD*``, ``*CREDENTIAL*``, ``*AUTH*`` …), when the value is long enough to be a secret
  (``MIN_SECRET_CHARS``) and not a path, a flag or a plain word; NAME is the variable's name.
  A long value cut in the middle (a preview's ``head...tail``) loses its head and tail too;
* well-known token shapes wherever they come from (a ``.env`` file, a cell's source, a page):
  Anthropic and OpenAI keys, GitHub tokens, AWS key ids and secret keys, Slack and Google keys,
  private-key PEM blocks, and ``NAME=value`` lines of a dotenv file whose NAME is credential-like;
  NAME is the shape's name (``anthropic-key``) or the dotenv line's name;
* what the user typed into a form field that looked like a secret (``remember_secret``: an MCP
  server's "password" field), should the server echo it back.

The model still learns that a value was there ("your key is set") but not the value.

Secrets the package holds itself and that live in no environment variable (the ``%agent serve``
token) are added while they are valid with ``hold_secret`` and removed with ``release_secret``.

Speed matters: every result passes here. Text shorter than a secret costs nothing; otherwise each
pattern runs only when its literal anchor (``sk-``, ``ghp_``, ``AKIA``, …) occurs in the text,
found by ``re``'s literal search (faster than ``str.find`` here), so a 100 KB result without
secrets costs about half a millisecond on a slow machine (benchmark figure 16). The environment
part is rebuilt only when the environment changes (a variable added or removed, or a
credential-named one changed).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from typing import cast

from .guard.processes import is_secret_name

__all__ = [
    "MIN_SECRET_CHARS",
    "Redactor",
    "hold_secret",
    "redact",
    "redactor",
    "release_secret",
    "remember_secret",
]

#: An environment value shorter than this is not treated as a secret ("1", "true", "us-east").
MIN_SECRET_CHARS = 8
#: A preview that shows this many characters of a long secret value's head or tail (and no
#: fewer) has them redacted too.
_FRAGMENT_CHARS = 12
#: A single short word of one case: a setting's value, too common to redact everywhere.
_PLAIN_WORD = re.compile(r"[a-z]{1,15}|[A-Z]{1,15}")
#: Values that are flags or settings, never secrets, whatever the variable is called.
_TRIVIAL_VALUES = frozenset({"true", "false", "yes", "no", "none", "null", "on", "off"})

#: Characters a token is made of: a shape preceded by one is part of a longer word
#: (``task-…`` is not ``sk-…``).
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Shape:
    """A token shape: a pattern that starts with a literal (``re`` then scans at memory speed),
    run only when its ``anchor`` (also literal-led) occurs in the text. A pattern with a group
    named ``value`` has only that group replaced."""

    __slots__ = ("anchor", "name", "pattern", "standalone")

    def __init__(
        self, anchor: re.Pattern[str], pattern: str, name: str, *, standalone: bool = True
    ) -> None:
        self.anchor = anchor
        self.pattern = re.compile(pattern, re.DOTALL)
        self.name = name
        #: the match must not follow a token character
        self.standalone = standalone


#: A token cut in the middle by a preview (``reprlib``'s ``...``, a ``…``): its tail goes too.
_CUT_TAIL = r"(?:(?:\.\.\.|…)[A-Za-z0-9_\-]+)?"
_SK = re.compile("sk-")
_GH = re.compile("gh[pousr]_|github_pat_")
_AWS_OR_GOOGLE = re.compile("A(?:KIA|SIA|Iza)")
_SHAPES = (
    _Shape(_SK, r"sk-ant-[A-Za-z0-9_\-]{16,}" + _CUT_TAIL, "anthropic-key"),
    _Shape(
        _SK, r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + _CUT_TAIL, "openai-key"
    ),
    _Shape(
        _GH,
        r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})" + _CUT_TAIL,
        "github-token",
    ),
    _Shape(_AWS_OR_GOOGLE, r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9_\-])", "aws-access-key-id"),
    _Shape(
        _AWS_OR_GOOGLE,  # the secret key comes with its key id (credentials files, .env)
        r"(?i:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key)"
        r"[\"']?\s*[=:]\s*[\"']?(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        "aws-secret-access-key",
        standalone=False,
    ),
    _Shape(_AWS_OR_GOOGLE, r"AIza[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])", "google-api-key"),
    _Shape(re.compile("xox[abprs]-"), r"xox[abprs]-[A-Za-z0-9\-]{10,}" + _CUT_TAIL, "slack-token"),
    _Shape(
        re.compile("-----BEGIN"),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*\Z)",
        "private-key",
        standalone=False,
    ),
)

#: A dotenv line, ``NAME=value`` (``export`` and quotes allowed, no space around ``=``: Python's
#: ``KEYWORD_ONLY = '…'`` is not one): its value is redacted when NAME is credential-like.
#: Looked at only around the markers the name rule looks for.
_DOTENV_LINE = re.compile(
    r"[ \t]*(?:export[ \t]+)?(?P<name>[A-Z][A-Z0-9_]*)=[\"']?"
    r"(?!\[redacted: )(?P<value>[^\s\"'#]{8,})"
)
#: The markers of the name rule (``PASSW`` covers ``PASSWORD`` and ``PASSWD``), each a pattern:
#: ``re`` finds a literal faster than ``str.find`` does.
_DOTENV_MARKERS = tuple(
    re.compile(marker) for marker in ("KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH")
)


def _is_secret_value(value: str) -> bool:
    return (
        len(value) >= MIN_SECRET_CHARS
        and value.lower() not in _TRIVIAL_VALUES
        and not value.startswith(("/", "~/", "./"))  # a path (SSH_AUTH_SOCK, KEY_FILE)
        and _PLAIN_WORD.fullmatch(value) is None  # a setting ("production"), not a secret
        and "\n" not in value
    )


class Redactor:
    """Redacts the values of one environment, and every known token shape."""

    def __init__(self, environ: Mapping[str, str], held: Mapping[str, str] | None = None) -> None:
        found: dict[str, str] = dict(held or {})
        for name, raw in environ.items():
            value = raw.strip()
            if is_secret_name(name) and _is_secret_value(value):
                found.setdefault(value, name)
        #: secret value -> the name of the variable that holds it
        self.values = found
        # the longest first, so that a value that contains another is replaced whole
        ordered = sorted(found, key=len, reverse=True)
        self._values_pattern = (
            re.compile("|".join(re.escape(value) for value in ordered)) if ordered else None
        )
        self._shortest = min((len(value) for value in ordered), default=MIN_SECRET_CHARS)
        #: values long enough that a preview showing only their head or tail still leaks
        self._long = [value for value in ordered if len(value) >= 2 * _FRAGMENT_CHARS]

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every secret replaced by ``[redacted: NAME]``, and how many were."""
        if len(text) < min(MIN_SECRET_CHARS, self._shortest):
            return text, 0
        count = 0
        pattern = self._values_pattern
        if (
            pattern is not None
            and len(text) >= self._shortest
            and any(value in text for value in self.values)
        ):
            names = self.values
            text, count = pattern.subn(lambda m: f"[redacted: {names[m.group()]}]", text)
        if self._long:
            text, found = self._redact_fragments(text)
            count += found
        seen: dict[re.Pattern[str], bool] = {}
        for shape in _SHAPES:
            present = seen.get(shape.anchor)
            if present is None:
                present = seen[shape.anchor] = shape.anchor.search(text) is not None
            if present:
                text, found = _replace_shape(shape, text)
                count += found
        if "=" in text:
            text, found = _redact_dotenv(text)
            count += found
        return text, count

    def _redact_fragments(self, text: str) -> tuple[str, int]:
        """Redact what is left of a long value cut in the middle: its head or its tail (at
        least ``_FRAGMENT_CHARS`` characters of it), as a preview or a capped result shows."""
        spans: dict[int, tuple[int, str]] = {}
        for value in self._long:
            name = self.values[value]
            head, tail = value[:_FRAGMENT_CHARS], value[-_FRAGMENT_CHARS:]
            position = text.find(head)
            while position != -1:
                end = position + _FRAGMENT_CHARS
                while end - position < len(value) and end < len(text):
                    if text[end] != value[end - position]:
                        break
                    end += 1
                spans.setdefault(position, (end, name))
                position = text.find(head, end)
            position = text.find(tail)
            while position != -1:
                start, end = position, position + _FRAGMENT_CHARS
                offset = len(value) - _FRAGMENT_CHARS  # where the tail starts in the value
                while offset > 0 and start > 0 and text[start - 1] == value[offset - 1]:
                    start -= 1
                    offset -= 1
                spans.setdefault(start, (end, name))
                position = text.find(tail, end)
        return _replace_spans(text, spans)


def _replace_spans(text: str, spans: dict[int, tuple[int, str]]) -> tuple[str, int]:
    """``text`` with each span (start -> (end, NAME)) replaced by ``[redacted: NAME]``;
    a span that overlaps an earlier one is left out."""
    if not spans:
        return text, 0
    pieces: list[str] = []
    done = 0
    count = 0
    for start in sorted(spans):
        end, name = spans[start]
        if start < done:
            continue
        pieces += [text[done:start], f"[redacted: {name}]"]
        done = end
        count += 1
    pieces.append(text[done:])
    return "".join(pieces), count


def _replace_shape(shape: _Shape, text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        start = match.start()
        if shape.standalone and start and text[start - 1] in _TOKEN_CHARS:
            return match.group()  # the end of a longer word
        count += 1
        if "value" not in match.re.groupindex:
            return f"[redacted: {shape.name}]"
        whole = match.group()
        inner_start = match.start("value") - start
        inner_end = match.end("value") - start
        return f"{whole[:inner_start]}[redacted: {shape.name}]{whole[inner_end:]}"

    replaced = shape.pattern.sub(replace, text)
    return replaced, count


def _redact_dotenv(text: str) -> tuple[str, int]:
    """Redact the values of credential-named ``NAME=value`` lines (a ``.env`` file's)."""
    spans: dict[int, tuple[int, str]] = {}  # value start -> (value end, NAME)
    for marker in _DOTENV_MARKERS:
        found = marker.search(text)
        while found is not None:
            position = found.start()
            line_start = text.rfind("\n", 0, position) + 1
            line_end = text.find("\n", position)
            if line_end == -1:
                line_end = len(text)
            match = _DOTENV_LINE.match(text, line_start, line_end)
            if match is not None and position < match.end("name"):
                name = match.group("name")
                if is_secret_name(name):
                    spans[match.start("value")] = (match.end("value"), name)
            found = marker.search(text, line_end)
    return _replace_spans(text, spans)


_lock = threading.Lock()
#: (environment key, the keys it was made of, the redactor), or None before the first call.
_cached: tuple[object, tuple[object, ...], Redactor] | None = None
#: Secrets held by the package (value -> NAME), and a count of their changes (in the cache key).
_held: dict[str, str] = {}
_held_changes = 0


def hold_secret(value: str, name: str) -> None:
    """Redact ``value`` as ``[redacted: NAME]`` from now on (a secret no environment variable
    holds: the ``%agent serve`` token)."""
    global _held_changes
    if len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _held[value] = name
            _held_changes += 1


def release_secret(value: str) -> None:
    """Stop redacting ``value`` (it is no longer valid)."""
    global _held_changes
    with _lock:
        if _held.pop(value, None) is not None:
            _held_changes += 1


def _stored() -> Mapping[object, object]:
    """``os.environ`` as it stores itself (encoded keys and values: cheap to look up)."""
    data: Mapping[object, object] | None = getattr(os.environ, "_data", None)
    return data if data is not None else cast("Mapping[object, object]", os.environ)


def _key_of(tracked: tuple[object, ...]) -> object:
    """What decides the redactor: how many variables there are, and the values of the
    credential-named ones. Cheap on purpose (every tool result asks): the count catches a
    variable added or removed, the values a key set anew in a cell; and the held secrets."""
    data = _stored()
    return len(data), _held_changes, tuple(data.get(key) for key in tracked)


def redactor() -> Redactor:
    """The redactor for the current ``os.environ``, rebuilt only when it changed."""
    global _cached
    cached = _cached
    if cached is not None and _key_of(cached[1]) == cached[0]:
        return cached[2]
    with _lock:
        encode: Callable[[str], object] = getattr(os.environ, "encodekey", lambda name: name)
        tracked = tuple(encode(name) for name in os.environ if is_secret_name(name))
        built = Redactor(os.environ, _held)
        _cached = (_key_of(tracked), tracked, built)
        return built


#: A typed secret shorter than this is not remembered (it would redact ordinary words).
MIN_REMEMBERED_CHARS = 4
#: At most this many typed secrets are remembered (the oldest are forgotten first).
MAX_REMEMBERED = 256
#: The typed secrets among the held ones, oldest first (for the bound above).
_remembered: dict[str, None] = {}


def remember_secret(value: str, name: str) -> None:
    """Redact ``value`` as ``[redacted: NAME]`` from every later result and prompt: a secret
    the user typed into a form (``notebook/asking/mcp_forms.py``) that a server may echo back. Held
    like the package's own secrets, for the rest of the session."""
    global _held_changes
    value = value.strip()
    if len(value) < MIN_REMEMBERED_CHARS:
        return
    with _lock:
        _remembered.pop(value, None)
        _remembered[value] = None
        _held[value] = name
        while len(_remembered) > MAX_REMEMBERED:
            oldest = next(iter(_remembered))
            del _remembered[oldest]
            _held.pop(oldest, None)
        _held_changes += 1


def redact(text: str) -> tuple[str, int]:
    """``text`` with secrets replaced by ``[redacted: NAME]``, and how many (see the module)."""
    if len(text) < MIN_REMEMBERED_CHARS:
        return text, 0
    return redactor().redact(text)
