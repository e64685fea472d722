"""A hostile model forges the undo journal (issue 20 point 5); what the agent keeps is signed.

A journal planted in a sub-folder (the workspace of a later session) makes ``%agent undo`` there
delete a user file; an entry numbered past six digits hides every real entry. The journal's
entries and steps are signed with a key kept outside the workspace; an unsigned or altered one
is refused with a message.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.factory import create_default_registry
from jupyter_agent.tools.guard.journal import DEFAULT_JOURNAL_FOLDER, ChangeJournal
from jupyter_agent.tools.guard.signing import key_path


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Jupyter data folder (where the signing key lives): outside the workspace."""
    folder = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(folder))
    return folder


def _write(ws: Path, journal: ChangeJournal, path: str, content: str) -> None:
    registry = create_default_registry(ToolContext(ws, journal=journal))
    result = asyncio.run(registry.call("write_file", {"file_path": path, "content": content}))
    assert not result.is_error, result.content


def _plant(journal_folder: Path, name: str, steps: list[dict[str, object]]) -> None:
    """An entry as the old, unsigned journal wrote it."""
    entry = journal_folder / name
    entry.mkdir(parents=True)
    (entry / "entry.json").write_text(json.dumps({"label": "cleanup"}))
    (entry / "steps.jsonl").write_text("".join(json.dumps(step) + "\n" for step in steps))


def test_a_journal_planted_in_a_sub_folder_deletes_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    precious = ws / "sub" / "precious.txt"
    precious.write_text("the user's work\n")
    digest = hashlib.sha256(precious.read_bytes()).hexdigest()
    forged = {"op": "write", "path": "precious.txt", "before": {"kind": "absent"}, "after": digest}
    # planted (by a command, or by an old version's tools) while the workspace was ws
    _plant(ws / "sub" / DEFAULT_JOURNAL_FOLDER, "000001", [forged])
    # later the user works in ws/sub, and undoes
    report = ChangeJournal(ws / "sub").undo()
    assert precious.read_text() == "the user's work\n", report.message
    assert "Refused" in report.message and "not signed by this agent" in report.message
    assert report.restored == ()


def test_entry_numbers_past_six_digits_hide_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    journal = ChangeJournal(ws)
    _plant(ws / DEFAULT_JOURNAL_FOLDER, "999999", [])
    journal.begin("cell 1")
    _write(ws, journal, "result.txt", "the agent's\n")
    report = journal.undo()
    assert report.restored == ("result.txt",), report.message
    assert not (ws / "result.txt").exists()
    assert "999999" in report.message and "Refused" in report.message


def test_an_altered_step_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keep.txt").write_text("the user's\n")
    journal = ChangeJournal(ws)
    journal.begin("cell 1")
    _write(ws, journal, "made.txt", "new\n")
    steps_file = next((ws / DEFAULT_JOURNAL_FOLDER).glob("*/steps.jsonl"))
    line = json.loads(steps_file.read_text())
    line["step"]["path"] = "keep.txt"  # retarget the signed step at a user file
    (ws / "keep.txt").write_text("new\n")  # ...whose content matches what the step says
    steps_file.write_text(json.dumps(line) + "\n")
    report = journal.undo()
    assert (ws / "keep.txt").read_text() == "new\n"
    assert report.restored == ()
    assert "not a step the journal wrote" in report.message


def test_a_signed_entry_moved_to_another_number_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    journal = ChangeJournal(ws)
    journal.begin("cell 1")
    _write(ws, journal, "made.txt", "new\n")
    folder = ws / DEFAULT_JOURNAL_FOLDER
    (folder / "000001").rename(folder / "000007")
    report = ChangeJournal(ws).undo()
    assert (ws / "made.txt").exists() and "Refused" in report.message


def test_the_key_is_private_and_outside_the_workspace(tmp_path: Path, data_dir: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    journal = ChangeJournal(ws)
    journal.begin("cell 1")
    _write(ws, journal, "made.txt", "new\n")
    key = key_path()
    assert key.parent.parent == data_dir.resolve()
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert not key.is_relative_to(ws)
    # the tools cannot read it, even with the workspace holding the data folder
    registry = create_default_registry(ToolContext(tmp_path))
    result = asyncio.run(registry.call("read_file", {"file_path": str(key)}))
    # the whole Jupyter data folder is out of the tools' reach (hidden_paths), the key with it
    assert result.is_error and "one of Jupyter's own folders" in result.content
