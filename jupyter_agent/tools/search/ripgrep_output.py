"""ripgrep's ``--json`` output, split into messages — whatever the length of a matched line.

rg prints each matched line whole, inside one JSON message on one output line, so a file with one
1 GB line makes a 1 GB message. Reading those with a line limit (asyncio's ``readline``) lost the
match and everything after it; holding them whole would cost gigabytes. So a message up to
``HELD_LINE_BYTES`` is parsed as usual, and a longer one — only a ``match`` message can be that
long — is parsed as it streams past: its path from the start, the first ``MAX_LINE_CHARS``
characters of the line and its exact length (as the Python search counts it) from the line's
text, its line number from what follows. Memory stays at one chunk.

This works on rg's fixed shape: ``{"type":"match","data":{"path":{...},"lines":{"text"|"bytes":
"..."},"line_number":N,...}}``. Inside a JSON string every ``"`` is escaped, so the first
unescaped quote after the line's text ends it.
"""

from __future__ import annotations

import base64
import codecs
import json
import re
from typing import Any

from .pysearch import MAX_LINE_CHARS

__all__ = ["HELD_LINE_BYTES", "LongMatch", "RipgrepOutput", "json_text"]

#: Output lines up to this size are parsed whole; longer ones are streamed (``LongMatch``).
HELD_LINE_BYTES = 1024 * 1024
#: A path (4 KB, escaped at most six-fold) and the start of the line's text fit in this much.
_HEAD_BYTES = 64 * 1024

_MATCH_START = b'{"type":"match","data":{"path":'
_LINES_KEY = re.compile(r',"lines":\{"(text|bytes)":"')
# Complete pieces of a JSON string's inside: plain runs, or whole escapes (an escape cut by the
# end of a chunk stays for the next one). rg never writes surrogate pairs (it sends UTF-8).
_STRING_PIECES = re.compile(rb'(?:[^"\\]++|\\(?:u[0-9a-fA-F]{4}|[^u]))*+')
_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/=]*+")
_LINE_NUMBER = re.compile(rb'^\},"line_number":(\d+)[,}]')
#: Bytes looked at after the line's text to find its number, and bytes taken per step.
_AFTER_BYTES = 256
_CHUNK = 1 << 20


class LongMatch:
    """A matched line too long to hold: where it is, how it starts and how long it is."""

    __slots__ = ("head", "length", "line_number", "path")

    def __init__(self, path: str, line_number: int, head: str, length: int) -> None:
        self.path = path
        self.line_number = line_number
        #: the first ``MAX_LINE_CHARS`` characters (after the trailing newline and ``\r`` go)
        self.head = head
        #: the line's length in characters, without the newline and trailing ``\r``
        self.length = length


Message = dict[str, Any] | LongMatch


class RipgrepOutput:
    """Feed it rg's output in chunks of any size; it answers the messages completed so far."""

    def __init__(self, *, held_line_bytes: int | None = None) -> None:
        self._held_limit = HELD_LINE_BYTES if held_line_bytes is None else held_line_bytes
        self._buffer = bytearray()
        self._long: _StreamedMatch | None = None

    def feed(self, data: bytes) -> list[Message]:
        messages: list[Message] = []
        position = 0
        while position < len(data):
            if self._long is not None:
                used, done = self._long.feed(memoryview(data)[position:])
                position += used
                if done:
                    self._finish_long(messages)
                continue
            newline = data.find(b"\n", position)
            end = len(data) if newline < 0 else newline
            if len(self._buffer) + end - position > self._held_limit:
                held = bytes(self._buffer)  # the message's start, without its newline
                self._buffer.clear()
                self._long = _StreamedMatch()
                self._long.feed(memoryview(held))  # takes it all: no newline, so not done
                continue
            self._buffer += data[position:end]
            if newline < 0:
                break
            position = newline + 1
            if self._buffer.strip():
                messages.append(json.loads(self._buffer))
            self._buffer.clear()
        return messages

    def close(self) -> list[Message]:
        """The last message if the output did not end with a newline (rg always ends one)."""
        messages: list[Message] = []
        if self._long is not None:
            self._finish_long(messages)
        elif self._buffer.strip():
            messages.append(json.loads(self._buffer))
        self._buffer.clear()
        return messages

    def _finish_long(self, messages: list[Message]) -> None:
        assert self._long is not None
        found = self._long.result()
        self._long = None
        if found is not None:
            messages.append(found)


class _StreamedMatch:
    """One over-long ``match`` message, parsed as its bytes arrive (see the module docstring)."""

    def __init__(self) -> None:
        self._state = "head"
        self._head = bytearray()
        self._path = ""
        self._kind = "text"
        self._carry = b""  # an escape, character or base64 group cut by the end of a chunk
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._start = ""  # the first characters of the line
        self._length = 0
        self._trailing_cr = 0  # "\r" characters at the end so far
        self._after = bytearray()  # what follows the text, up to the line number
        self._line_number: int | None = None

    def feed(self, view: memoryview) -> tuple[int, bool]:
        """Consume from ``view``; (bytes used, whether the message's newline was reached)."""
        used = 0
        while used < len(view):
            rest = view[used:]
            if self._state == "head":
                taken, done = self._feed_head(rest)
                used += taken
                if done:
                    return used, True
            elif self._state == "text":
                used += self._feed_text(rest)
            elif self._state == "after":
                used += self._feed_after(rest)
            else:  # "skip": the rest of the message (its submatches) up to the newline
                piece = bytes(rest[:_CHUNK])
                newline = piece.find(b"\n")
                if newline >= 0:
                    return used + newline + 1, True
                used += len(piece)
        return used, False

    def result(self) -> LongMatch | None:
        if self._line_number is None:
            return None  # not a match message (never long in practice), or malformed
        length = self._length - self._trailing_cr
        return LongMatch(self._path, self._line_number, self._start[:length], length)

    def _feed_head(self, rest: memoryview) -> tuple[int, bool]:
        piece = bytes(rest[: _HEAD_BYTES - len(self._head)])
        newline = piece.find(b"\n")
        if newline >= 0:
            piece = piece[: newline + 1]
        self._head += piece
        if len(self._head) < _HEAD_BYTES and newline < 0:
            return len(piece), False
        head = bytes(self._head)
        self._head.clear()
        leftover = head  # without a match's shape: skip to the newline
        self._state = "skip"
        if head.startswith(_MATCH_START):
            text = head.decode("utf-8", "ignore")
            try:
                path, end = json.JSONDecoder().raw_decode(text, len(_MATCH_START))
            except ValueError:
                path, end = None, 0
            key = _LINES_KEY.match(text, end) if isinstance(path, dict) else None
            if isinstance(path, dict) and key is not None:
                self._path = json_text(path)
                self._kind = key.group(1)
                self._state = "text"
                leftover = head[len(text[: key.end()].encode("utf-8")) :]
        # What the head held past the point reached is parsed now; its unused tail (if the
        # message ended in it) lies within this call's piece.
        used, done = self.feed(memoryview(leftover))
        return len(piece) - (len(leftover) - used), done

    def _feed_text(self, rest: memoryview) -> int:
        carried = len(self._carry)
        chunk = self._carry + bytes(rest[:_CHUNK])
        if self._kind == "text":
            match = _STRING_PIECES.match(chunk)
            assert match is not None
            end = match.end()
            if end == len(chunk):
                end = _whole_characters(chunk, end)
            if end:
                self._take(json.loads(b'"' + chunk[:end] + b'"'))
        else:
            match = _BASE64_RUN.match(chunk)
            assert match is not None
            end = match.end()
            if end == len(chunk):
                end -= end % 4
            if end:
                self._take(self._decoder.decode(base64.b64decode(chunk[:end])))
        if end < len(chunk) and chunk[end : end + 1] == b'"':
            self._take(self._decoder.decode(b"", True))
            self._state = "after"
            return end + 1 - carried
        if end < len(chunk) - 16:  # not rg's JSON: give up on this message
            self._state = "skip"
            return max(end - carried, 0)
        self._carry = chunk[end:]
        return len(chunk) - carried

    def _take(self, text: str) -> None:
        if text.endswith("\n"):  # rg's lines end at a newline, so only the last piece has one
            text = text[:-1]
        if not text:
            return
        if len(self._start) < MAX_LINE_CHARS:
            self._start += text[: MAX_LINE_CHARS - len(self._start)]
        self._length += len(text)
        kept = text.rstrip("\r")
        if kept:
            self._trailing_cr = len(text) - len(kept)
        else:
            self._trailing_cr += len(text)

    def _feed_after(self, rest: memoryview) -> int:
        piece = bytes(rest[: _AFTER_BYTES - len(self._after)])
        newline = piece.find(b"\n")
        if newline >= 0:
            piece = piece[:newline]  # the newline itself is for the skip state to find
        self._after += piece
        found = _LINE_NUMBER.match(self._after)
        if found is not None:
            self._line_number = int(found.group(1))
        if found is not None or newline >= 0 or len(self._after) >= _AFTER_BYTES:
            self._state = "skip"
        return len(piece)


def _whole_characters(data: bytes, end: int) -> int:
    """``end`` moved back before a UTF-8 character the end of ``data`` cuts in two."""
    start = end
    while start > 0 and end - start < 3 and data[start - 1] & 0xC0 == 0x80:
        start -= 1
    if start > 0 and data[start - 1] >= 0xC0:
        lead = data[start - 1]
        needed = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if end - start + 1 < needed:
            return start - 1
    return end


def json_text(value: dict[str, Any]) -> str:
    """A path or line as rg sends it: UTF-8 ``text``, or ``bytes`` in base64 (not UTF-8)."""
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", "replace")
