"""The undo journal, end to end: real file tools through the registry change real files, the
journal keeps what they would lose, and ``undo()`` puts it back — but never over later work."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from race_arena import CALLS as RACE_CALLS
from race_arena import SECRET, restore_inside

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.guard.journal import DEFAULT_JOURNAL_FOLDER, MAX_ENTRIES, ChangeJournal
from jupyter_agent.tools.registry import ToolRegistry


class Cell:
    """A workspace with a journal and the default registry (remove enabled), as a session has."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.journal = ChangeJournal(ws)
        self.context = ToolContext(ws, journal=self.journal)
        self.registry: ToolRegistry = create_default_registry(self.context)
        self.registry.enable("remove")

    async def ok(self, name: str, **args: Any) -> str:
        result = await self.registry.call(name, args)
        assert not result.is_error, result.content
        return result.content


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def cell(ws: Path) -> Cell:
    return Cell(ws)


def tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` but the journal: files with content, folders, symlinks."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder.split(os.sep)[0] == ".jupyter_agent":
            continue
        for name in dirs + files:
            path = Path(folder) / name
            rel = os.path.normpath(os.path.join(rel_folder, name))
            if rel.split(os.sep)[0] == ".jupyter_agent":
                continue
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "<folder>"
            else:
                found[rel] = path.read_bytes().decode("latin-1")
    return found


async def test_undo_puts_back_every_kind_of_change(cell: Cell, ws: Path) -> None:
    (ws / "edit.txt").write_text("alpha beta\n")
    (ws / "over.txt").write_text("old content\n")
    (ws / "gone.txt").write_text("keep me\n")
    (ws / "empty").mkdir()
    (ws / "data" / "deep").mkdir(parents=True)
    (ws / "data" / "deep" / "x.csv").write_text("1,2\n")
    (ws / "link").symlink_to("over.txt")
    (ws / "moved.txt").write_text("move me\n")
    before = tree(ws)

    cell.journal.begin("cell [3]")
    await cell.ok("write_file", file_path="new/sub/made.txt", content="fresh")
    await cell.ok("write_file", file_path="over.txt", content="replaced")
    await cell.ok("edit_file", file_path="edit.txt", old_string="beta", new_string="gamma")
    await cell.ok("mkdir", path="a/b/c")
    await cell.ok("move", source="moved.txt", destination="elsewhere/renamed.txt")
    await cell.ok("remove", path="gone.txt")
    await cell.ok("remove", path="empty")
    await cell.ok("remove", path="data", recursive=True)
    await cell.ok("remove", path="link")
    assert tree(ws) != before

    report = cell.journal.undo()
    assert tree(ws) == before, report.message
    assert report.skipped == ()
    assert "cell [3]" in report.message
    assert "run_bash" in report.message  # says what it cannot undo
    for shown in ("over.txt", "edit.txt", "moved.txt", "gone.txt", "data", "link", "new/"):
        assert shown in report.restored or shown in report.message


async def test_overwrite_keeps_the_old_inode_and_its_mode_without_copying(
    cell: Cell, ws: Path
) -> None:
    big = ws / "big.bin.txt"
    big.write_bytes(b"x" * (8 * 1024 * 1024))
    big.chmod(0o640)
    inode = big.stat().st_ino
    cell.journal.begin("overwrite")
    await cell.ok("write_file", file_path="big.bin.txt", content="small now")
    kept = [p for p in (ws / DEFAULT_JOURNAL_FOLDER).rglob("kept-*")]
    assert [p.stat().st_ino for p in kept] == [inode]  # a hard link, not a copy
    cell.journal.undo()
    assert big.stat().st_ino == inode
    assert stat.S_IMODE(big.stat().st_mode) == 0o640
    assert big.stat().st_size == 8 * 1024 * 1024


async def test_a_file_changed_after_the_agent_is_left_alone_and_the_report_says_so(
    cell: Cell, ws: Path
) -> None:
    (ws / "notes.txt").write_text("mine v1\n")
    cell.journal.begin("cell [5]")
    await cell.ok("write_file", file_path="notes.txt", content="agent's version\n")
    await cell.ok("write_file", file_path="other.txt", content="agent made this\n")
    await cell.ok("mkdir", path="made")
    (ws / "notes.txt").write_text("mine v2, typed after the agent\n")  # the user's later work
    (ws / "made" / "user.txt").write_text("user's file\n")

    report = cell.journal.undo()
    assert (ws / "notes.txt").read_text() == "mine v2, typed after the agent\n"
    assert (ws / "made" / "user.txt").exists()
    assert not (ws / "other.txt").exists()  # the rest is still undone
    assert set(report.skipped) == {"notes.txt", "made"}
    assert report.restored == ("other.txt",)
    assert "notes.txt" in report.message and "changed after the agent" in report.message
    kept_at = re.search(r"kept in (\S+?)[;.](?: |$)", report.message)
    assert kept_at is not None
    assert (ws / kept_at[1]).read_text() == "mine v1\n"  # where it says the old one is


async def test_a_path_taken_again_blocks_restoring_a_removed_file(cell: Cell, ws: Path) -> None:
    (ws / "a.txt").write_text("original\n")
    cell.journal.begin("remove")
    await cell.ok("remove", path="a.txt")
    (ws / "a.txt").write_text("a new file by the user\n")
    report = cell.journal.undo()
    assert (ws / "a.txt").read_text() == "a new file by the user\n"
    assert report.skipped == ("a.txt",) and report.restored == ()


async def test_the_journal_survives_a_restart_and_undoes_cells_newest_first(ws: Path) -> None:
    first = Cell(ws)
    first.journal.begin("cell [1]")
    await first.ok("write_file", file_path="f.txt", content="one")
    first.journal.begin("cell [2]")  # a cell that changed nothing writes no entry
    first.journal.begin("cell [3]")
    await first.ok("write_file", file_path="f.txt", content="three")

    restarted = Cell(ws)  # a new kernel: a new journal object on the same folder
    report = restarted.journal.undo()
    assert "cell [3]" in report.message and (ws / "f.txt").read_text() == "one"
    report = restarted.journal.undo()
    assert "cell [1]" in report.message and not (ws / "f.txt").exists()
    report = restarted.journal.undo()
    assert report.restored == () and report.message.startswith("Nothing to undo")


async def test_changes_after_an_undo_start_a_new_entry(cell: Cell, ws: Path) -> None:
    cell.journal.begin("cell [1]")
    await cell.ok("write_file", file_path="f.txt", content="one")
    cell.journal.undo()
    await cell.ok("write_file", file_path="g.txt", content="two")
    report = cell.journal.undo()
    assert report.restored == ("g.txt",)
    assert not (ws / "g.txt").exists() and not (ws / "f.txt").exists()


async def test_concurrent_calls_of_one_reply_are_all_undone(cell: Cell, ws: Path) -> None:
    for index in range(10):
        (ws / f"f{index}.txt").write_text(f"old {index}\n")
    before = tree(ws)
    cell.journal.begin("wide reply")
    calls = [
        cell.ok("write_file", file_path=f"f{index}.txt", content=f"new {index}")
        for index in range(10)
    ] + [cell.ok("write_file", file_path=f"d{index}/n.txt", content="x") for index in range(10)]
    await asyncio.gather(*calls)
    report = cell.journal.undo()
    assert tree(ws) == before, report.message


async def test_old_entries_leave_the_journal(cell: Cell, ws: Path) -> None:
    for index in range(MAX_ENTRIES + 5):
        cell.journal.begin(f"cell [{index}]")
        await cell.ok("write_file", file_path="f.txt", content=str(index))
    entries = sorted(os.listdir(ws / DEFAULT_JOURNAL_FOLDER))
    assert len(entries) == MAX_ENTRIES
    for _ in range(MAX_ENTRIES):
        cell.journal.undo()
    assert (ws / "f.txt").read_text() == "4"  # the oldest kept entry was cell [5]


async def test_without_a_journal_the_tools_keep_nothing(ws: Path) -> None:
    context = ToolContext(ws)
    registry = create_default_registry(context)
    registry.enable("remove")
    (ws / "a.txt").write_text("x")
    await registry.call("write_file", {"file_path": "a.txt", "content": "y"})
    await registry.call("remove", {"path": "a.txt"})
    assert not (ws / ".jupyter_agent").exists()


async def test_the_file_tools_cannot_touch_the_journal(cell: Cell, ws: Path) -> None:
    """A model that could write the journal could forge a step that makes the user's undo delete
    or replace their files; with a journal attached, the tools refuse its folder and ancestors."""
    (ws / "precious.txt").write_text("the user's\n")
    cell.journal.begin("cell")
    await cell.ok("write_file", file_path="f.txt", content="x")
    entry = f"{DEFAULT_JOURNAL_FOLDER}/000001"
    forged = {"op": "write", "path": "precious.txt", "before": {"kind": "absent"}}
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("write_file", {"file_path": f"{entry}/steps.jsonl", "content": json.dumps(forged)}),
        ("edit_file", {"file_path": f"{entry}/steps.jsonl", "old_string": "f", "new_string": "g"}),
        ("write_file", {"file_path": f"{DEFAULT_JOURNAL_FOLDER}/000002/x", "content": ""}),
        ("mkdir", {"path": f"{DEFAULT_JOURNAL_FOLDER}/000009"}),
        ("remove", {"path": ".jupyter_agent", "recursive": True}),
        ("remove", {"path": DEFAULT_JOURNAL_FOLDER, "recursive": True}),
        ("move", {"source": ".jupyter_agent", "destination": "elsewhere"}),
        ("move", {"source": "f.txt", "destination": f"{entry}/steps.jsonl"}),
    ]
    for name, args in attempts:
        result = await cell.registry.call(name, args)
        assert result.is_error and "undo journal" in result.content, (name, result.content)
    report = cell.journal.undo()
    assert report.restored == ("f.txt",)
    assert (ws / "precious.txt").read_text() == "the user's\n"
    # any .jupyter_agent folder is the agent's alone (SPEC: out of the tools' reach, at any depth)
    result = await cell.registry.call(
        "write_file", {"file_path": ".jupyter_agent/notes.md", "content": "ok"}
    )
    assert result.is_error and ".jupyter_agent" in result.content


# -- the journal is in the workspace, so a model can write it: treated as hostile ---------------


def plant_entry(ws: Path, steps: list[dict[str, Any]], kept: dict[str, bytes]) -> None:
    """An entry whose label and steps carry valid signatures (as if its planter had the key):
    what the undoer still checks on each step is tested on its own."""
    from jupyter_agent.tools.guard import journal as module
    from jupyter_agent.tools.guard.signing import sign

    entry = ws / DEFAULT_JOURNAL_FOLDER / "000999"
    entry.mkdir(parents=True)
    label: dict[str, Any] = {"label": "planted", "started": "now", "id": "ab" * 16}
    covered = ChangeJournal(ws)._label_bytes("000999", label)
    label["signature"] = sign(module._LABEL_PURPOSE, covered)
    (entry / "entry.json").write_text(json.dumps(label))
    lines = [
        {
            "step": s,
            "n": n,
            "signature": sign(module._STEP_PURPOSE, module._step_bytes(label["id"], n, s)),
        }
        for n, s in enumerate(steps)
    ]
    (entry / "steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in lines) + "junk\n")
    for name, data in kept.items():
        (entry / name).write_bytes(data)


def test_a_planted_entry_cannot_reach_outside_the_workspace_or_into_git(
    tmp_path: Path, ws: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "up").symlink_to(tmp_path)
    planted_after = "0" * 64
    steps: list[dict[str, Any]] = [
        {"op": "remove", "path": "../outside.txt", "kept": "kept-1"},
        {"op": "remove", "path": str(outside), "kept": "kept-1"},
        {"op": "remove", "path": "up/new.txt", "kept": "kept-1"},
        {"op": "rmdir", "path": ".git/hooks"},
        {"op": "move", "source": ".git/config", "destination": "x", "inode": [0, 0]},
        {
            "op": "write",
            "path": "../outside.txt",
            "before": {"kind": "absent"},
            "after": planted_after,
        },
        {"op": "remove", "path": "ok.txt", "kept": "../../../outside.txt"},  # not a kept name
        {"op": "exec", "path": "x"},
        {"op": "rmdir", "path": f"{DEFAULT_JOURNAL_FOLDER}/000999"},  # the journal itself
    ]
    plant_entry(ws, steps, {"kept-1": b"planted"})
    report = ChangeJournal(ws).undo()
    assert outside.read_text() == "secret\n"
    assert not (tmp_path / "new.txt").exists()
    assert not (ws / ".git" / "hooks").exists()
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / "ok.txt").exists()
    assert (ws / DEFAULT_JOURNAL_FOLDER / "000999").is_dir()
    assert report.restored == ()
    assert "not a step the journal wrote" in report.message


async def test_a_journal_folder_swapped_for_a_symlink_writes_nothing_outside(
    tmp_path: Path, ws: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    cell = Cell(ws)
    (ws / ".jupyter_agent").mkdir()
    (ws / ".jupyter_agent" / "undo").symlink_to(outside)
    cell.journal.begin("cell")
    result = await cell.ok("write_file", file_path="f.txt", content="x")
    assert "undo will not cover this change" in result
    assert os.listdir(outside) == []
    # a journal made while the symlink is there (a new kernel) keeps to the named folder too
    again = Cell(ws)
    assert again.journal.folder == ws / DEFAULT_JOURNAL_FOLDER
    assert "undo will not cover" in await again.ok("write_file", file_path="g.txt", content="y")
    assert again.journal.undo().message.startswith("Cannot read the undo journal")
    assert os.listdir(outside) == []


# -- journaling and undoing under the racing swapper of race_arena.py ------------------------------

JOURNALED_TOOLS = ("write_file", "edit_file", "mkdir", "move", "remove")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux")
@pytest.mark.timeout(180)
async def test_journal_and_undo_under_a_racing_swap_never_reach_outside(
    arena: tuple[Path, Path],
) -> None:
    """The journal keeps and restores through the tools' held descriptors: while ``dir`` keeps
    being exchanged with a symlink to an outside folder, nothing outside is kept, changed or
    restored over (the ``arena`` fixture compares the outside folder afterwards)."""
    workspace, _outside = arena
    journal = ChangeJournal(workspace)
    registry = create_default_registry(ToolContext(workspace, journal=journal))
    registry.enable("remove")
    for batch in range(30):
        journal.begin(f"batch {batch}")
        tool = JOURNALED_TOOLS[batch % len(JOURNALED_TOOLS)]
        calls = RACE_CALLS[tool]
        await asyncio.gather(
            *(registry.call(tool, calls[(batch + i) % len(calls)]) for i in range(10))
        )
        restore_inside(workspace)
    for _ in range(MAX_ENTRIES):
        await asyncio.to_thread(journal.undo)
    for kept in (workspace / DEFAULT_JOURNAL_FOLDER).rglob("*"):
        if kept.is_file() and not kept.is_symlink():
            assert SECRET not in kept.read_text(errors="replace"), kept


# -- any sequence of file-tool calls is undone exactly ------------------------------------------

NAMES = ("a.txt", "b.txt", "d/a.txt", "d/e/b.txt", "d", "d/e", "f")
OPERATION = st.one_of(
    st.tuples(st.just("write_file"), st.sampled_from(NAMES), st.sampled_from(("1", "22", ""))),
    st.tuples(st.just("edit_file"), st.sampled_from(NAMES), st.sampled_from(("1", "2"))),
    st.tuples(st.just("mkdir"), st.sampled_from(NAMES), st.just("")),
    st.tuples(st.just("move"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.sampled_from(("", "recursive"))),
)


def _arguments(op: str, path: str, extra: str) -> dict[str, Any]:
    if op == "write_file":
        return {"file_path": path, "content": extra * 3}
    if op == "edit_file":
        return {"file_path": path, "old_string": extra, "new_string": extra + "x"}
    if op == "mkdir":
        return {"path": path}
    if op == "move":
        return {"source": path, "destination": extra}
    return {"path": path, "recursive": extra == "recursive"}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=st.lists(OPERATION, max_size=4), cell_ops=st.lists(OPERATION, min_size=1, max_size=8))
def test_any_sequence_of_changes_is_undone_exactly(
    tmp_path: Path, start: list[tuple[str, str, str]], cell_ops: list[tuple[str, str, str]]
) -> None:
    async def play() -> None:
        ws = Path(tempfile.mkdtemp(dir=tmp_path))
        setup = create_default_registry(ToolContext(ws))  # the user's files, before the cell
        setup.enable("remove")
        for op, path, extra in start:
            await setup.call(op, _arguments(op, path, extra))
        before = tree(ws)
        cell = Cell(ws)
        cell.journal.begin("cell")
        for op, path, extra in cell_ops:
            await cell.registry.call(op, _arguments(op, path, extra))
        report = cell.journal.undo()
        assert report.skipped == (), report.message
        assert tree(ws) == before, report.message

    asyncio.run(play())


async def test_a_step_whose_folder_is_gone_is_reported_not_raised(cell: Cell, ws: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "a.txt").write_text("old\n")
    cell.journal.begin("cell")
    await cell.ok("remove", path="d/a.txt")
    (ws / "d").rmdir()  # the user removed the folder afterwards
    report = cell.journal.undo()
    assert report.skipped == ("d/a.txt",)
    assert "is gone" in report.message
