"""The co-authoring comm has one protocol: the page's types and the kernel's say the same.

``labextension/src/protocol.ts`` types every message of the comm for the page;
``jupyter_agent/notebook/coauthor/comm_protocol.py`` mirrors them for the kernel. They were written
apart and are built apart, so nothing but this test notices when one side renames a field, adds an
operation, or makes a field optional. It reads ``protocol.ts`` with a small parser (its form is kept
simple for that: ``export interface I<Name>`` blocks, one field per line) and compares each
interface with the ``TypedDict`` of the same name without the ``I``: the fields, which are optional,
and their types where both sides use plain types, literals or the protocol's own interfaces
(nbformat's types and the diff's rows are compared by name only).
"""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import (
    Any,
    Literal,
    NotRequired,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

import pytest

from jupyter_agent.notebook.coauthor import comm_protocol
from jupyter_agent.notebook.coauthor.comm_protocol import OperationBody, Reply
from jupyter_agent.notebook.views import render

SOURCE = Path(__file__).resolve().parents[3] / "labextension" / "src"

_INTERFACE = re.compile(
    r"^export interface I(\w+)(?: extends ([\w, ]+))? \{(?:\}|\n(.*?)^\})", re.M | re.S
)
_FIELD = re.compile(r"^  (\w+)(\??): (.+);$", re.M)
_ALIAS = re.compile(r"^export type (\w+) =\s*(.+?);$", re.M | re.S)
_CONST = re.compile(r"^export const (\w+) = '([^']*)';$", re.M)
_PLAIN = {"string": "str", "number": "number", "boolean": "bool", "null": "None"}

#: A field: whether it is optional, and its type as a set of atoms (None: not compared).
Field = tuple[bool, frozenset[str] | None]


class Protocol:
    """``protocol.ts`` as read: its interfaces (resolved), literal aliases, unions, constants."""

    def __init__(self, text: str) -> None:
        self.constants = dict(_CONST.findall(text))
        self.aliases: dict[str, list[str]] = {
            name: [part.strip() for part in body.replace("\n", " ").split("|") if part.strip()]
            for name, body in _ALIAS.findall(text)
        }
        raw: dict[str, tuple[list[str], list[tuple[str, str, str]]]] = {}
        for name, parents, body in _INTERFACE.findall(text):
            bases = [p.strip()[1:] for p in parents.split(",") if p.strip()]
            raw[name] = (bases, _FIELD.findall(body or ""))
        self.names = set(raw)
        self.interfaces = {name: self._resolve(name, raw) for name in raw}

    def _resolve(self, name: str, raw: dict[str, Any]) -> dict[str, Field]:
        bases, fields = raw[name]
        resolved: dict[str, Field] = {}
        for base in bases:
            resolved.update(self._resolve(base, raw))
        for field, optional, kind in fields:
            resolved[field] = (optional == "?", self.atoms(kind))
        return resolved

    def atoms(self, kind: str) -> frozenset[str] | None:
        out: set[str] = set()
        for part in (p.strip() for p in kind.split("|")):
            if part.endswith("[]"):
                inner = self.atoms(part[:-2])
                if inner is None:
                    return None
                out.add(f"list[{'|'.join(sorted(inner))}]")
            elif part in _PLAIN:
                out.add(_PLAIN[part])
            elif part in ("true", "false") or re.fullmatch(r"'[^']*'", part):
                out.add(part)
            elif part in self.aliases and all(
                re.fullmatch(r"'[^']*'", p) for p in self.aliases[part]
            ):
                out.update(self.aliases[part])
            elif part.startswith("I") and part[1:] in self.names:
                out.add(part[1:])
            else:
                return None  # nbformat's types, the diff's rows: compared by name only
        return frozenset(out)


def python_atoms(hint: Any) -> frozenset[str] | None:
    origin = get_origin(hint)
    if origin is NotRequired:
        return python_atoms(get_args(hint)[0])
    if origin in (Union, types.UnionType):
        out: set[str] = set()
        for arg in get_args(hint):
            atoms = python_atoms(arg)
            if atoms is None:
                return None
            out |= atoms
        return frozenset(out)
    if origin is Literal:
        return frozenset(
            ("true" if v else "false") if isinstance(v, bool) else f"'{v}'" for v in get_args(hint)
        )
    if origin is list:
        inner = python_atoms(get_args(hint)[0])
        return None if inner is None else frozenset({f"list[{'|'.join(sorted(inner))}]"})
    if hint is str:
        return frozenset({"str"})
    if hint in (int, float):
        return frozenset({"number"})
    if hint is bool:
        return frozenset({"bool"})
    if hint is type(None):
        return frozenset({"None"})
    if is_typeddict(hint):
        return frozenset({hint.__name__})
    return None


def python_fields(typed: type) -> dict[str, Field]:
    hints = get_type_hints(typed, include_extras=True)
    total = getattr(typed, "__total__", True)
    return {
        name: (get_origin(hint) is NotRequired or not total, python_atoms(hint))
        for name, hint in hints.items()
    }


def typed_dicts() -> dict[str, type]:
    return {name: value for name, value in vars(comm_protocol).items() if is_typeddict(value)}


@pytest.fixture(scope="module")
def page() -> Protocol:
    return Protocol((SOURCE / "protocol.ts").read_text(encoding="utf-8"))


def test_the_parser_reads_the_page_side(page: Protocol) -> None:
    """A parser that found nothing would make every comparison below pass."""
    assert len(page.interfaces) >= 25
    assert page.interfaces["InsertOp"] == {
        "op": (False, frozenset({"'insert'"})),
        "turn": (False, frozenset({"str"})),
        "source": (False, frozenset({"str"})),
        "cell_type": (False, frozenset({"'code'", "'markdown'"})),
        "after": (True, frozenset({"str", "None"})),
    }
    assert page.interfaces["Hello"]["cells"] == (False, frozenset({"list[CellInfo]"}))


def test_both_sides_name_the_same_messages(page: Protocol) -> None:
    kernel = set(typed_dicts()) - {"Reply"}  # the kernel's reading of any reply: below
    assert sorted(page.interfaces) == sorted(kernel)


def test_every_message_has_the_same_fields(page: Protocol) -> None:
    kernel = typed_dicts()
    differences = []
    for name, fields in sorted(page.interfaces.items()):
        mine = python_fields(kernel[name])
        for field in sorted(set(fields) | set(mine)):
            if field not in mine or field not in fields:
                side = "the page" if field in fields else "the kernel"
                differences.append(f"{name}.{field}: only {side} has it")
                continue
            (optional, kind), (my_optional, my_kind) = fields[field], mine[field]
            if optional != my_optional:
                differences.append(f"{name}.{field}: optional on one side only")
            if kind is not None and my_kind is not None and kind != my_kind:
                differences.append(f"{name}.{field}: {sorted(kind)} vs {sorted(my_kind)}")
    assert differences == []


def test_both_sides_have_the_same_operations(page: Protocol) -> None:
    members = [name[1:] for name in page.aliases["OperationBody"]]
    assert members == [typed.__name__ for typed in get_args(OperationBody)]
    ops = [page.interfaces[name]["op"][1] for name in members]
    assert all(op is not None and len(op) == 1 for op in ops)
    names = {next(iter(op)).strip("'") for op in ops if op is not None}
    assert len(names) == len(members)  # one interface per operation
    # each operation has a result, under its name, on both sides
    assert set(page.interfaces["Results"]) == names
    assert set(get_type_hints(comm_protocol.Results)) == names


def test_the_kernel_reads_every_field_a_reply_can_carry() -> None:
    """``Reply`` (the kernel's typed view of what the page sent) holds exactly the fields of a
    success, a failure, the notebook and every result, with their types."""
    parts = [comm_protocol.Success, comm_protocol.Failure, comm_protocol.NotebookSnapshot]
    parts += list(get_type_hints(comm_protocol.Results).values())
    expected: dict[str, set[frozenset[str] | None]] = {}
    for part in parts:
        for field, (_optional, kind) in python_fields(part).items():
            expected.setdefault(field, set()).add(kind)
    reply = python_fields(Reply)
    assert set(reply) == set(expected)
    assert all(optional for optional, _kind in reply.values())
    for field, (_optional, kind) in reply.items():
        if kind is not None and field != "ok":  # ok: True on success, False on failure
            assert expected[field] == {kind}, field


def test_both_sides_name_the_same_comms_and_stop_button(page: Protocol) -> None:
    assert page.constants["TARGET"] == comm_protocol.TARGET
    assert page.constants["HELLO"] == comm_protocol.HELLO_TARGET
    buttons = dict(_CONST.findall((SOURCE / "buttons.ts").read_text(encoding="utf-8")))
    assert buttons["STOP_CLASS"] == render.STOP_BUTTON_CLASS


def test_a_field_renamed_on_one_side_is_caught(page: Protocol) -> None:
    """The comparison itself fails on a drift (here made in the page's text)."""
    text = (SOURCE / "protocol.ts").read_text(encoding="utf-8")
    drifted = Protocol(text.replace("  old_string: string;", "  oldString: string;"))
    assert "old_string" not in drifted.interfaces["EditOp"]
    assert "oldString" in drifted.interfaces["EditOp"]
    assert python_fields(comm_protocol.EditOp).keys() != drifted.interfaces["EditOp"].keys()
    assert python_fields(comm_protocol.EditOp).keys() == page.interfaces["EditOp"].keys()
