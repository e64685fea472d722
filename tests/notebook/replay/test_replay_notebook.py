"""Run All replays a saved notebook's agent cells: no key, no request, the same outputs.

A notebook with three ``%%agent`` cells runs against the fake Messages API and is saved; a
fresh kernel (nbclient, as ``nbconvert --execute`` runs it) then reruns the saved file with
``JPY_SESSION_NAME`` naming it. Each cell replays its recorded turn, its tools running for real
and their results checked: a changed CSV makes the cell that read it name the diverging call; a
record edited in the file is refused with a one-line notice. ``--fresh``, a changed prompt and
``%agent replay off`` ask the model; a replay runs its tools under today's policies.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from fake_anthropic import FakeAnthropic, Reply, text, tool_use
from nbclient import NotebookClient

from jupyter_agent.notebook.replay.record import TURN_KEY

pytestmark = pytest.mark.slow

CELLS = [
    "%load_ext jupyter_agent",
    "%%agent\nWhat do my notes say?",
    "%%agent\nHow many rows does data.csv have, going by my notes?",
    "%%agent\nSay done.",
]


def _script(fake: FakeAnthropic) -> None:
    fake.add(
        Reply([tool_use("toolu_a1", "read_file", {"file_path": "notes.txt"})]),
        text("Your notes say: count the rows of data.csv."),
        Reply(
            [
                {"type": "text", "text": "Reading both files."},
                tool_use("toolu_b1", "read_file", {"file_path": "notes.txt"}),
                tool_use("toolu_b2", "read_file", {"file_path": "data.csv"}),
            ]
        ),
        text("data.csv has **3** rows."),
        text("Done."),
    )


def _run(path: Path, folder: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    return nb


def _answers(nb: nbformat.NotebookNode) -> list[list[str]]:
    """Per agent cell, its display outputs' text (the answer and the tool calls' records), the
    calls' durations left out (the only part that differs from run to run)."""
    return [
        [
            re.sub(r" · [\d.,]+ m?s\b", " · (time)", str(output["data"].get("text/plain", "")))
            for output in cell.outputs
            if output.output_type == "display_data"
        ]
        for cell in nb.cells[1:]
    ]


def _said(cell: Any) -> str:
    return "".join(
        str(output.get("text", "")) for output in cell.outputs if output.output_type == "stream"
    )


def _records(nb: nbformat.NotebookNode) -> list[Any]:
    found = []
    for cell in nb.cells[1:]:
        kept = [o.metadata[TURN_KEY] for o in cell.outputs if TURN_KEY in o.get("metadata", {})]
        found.append(kept[0] if len(kept) == 1 else None)
    return found


def _saved_sizes(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """What the agent cells' outputs take in the saved file (nbformat's own writing), with and
    without their turn records: the notebook's size less the same notebook without them."""
    agent_cells = nbformat.v4.new_notebook(cells=copy.deepcopy(nb.cells[1:]))
    static = copy.deepcopy(agent_cells)
    bare = copy.deepcopy(agent_cells)
    for cell in static.cells:
        for output in cell.outputs:
            output.get("metadata", {}).pop(TURN_KEY, None)
    for cell in bare.cells:
        cell.outputs = []
    base = len(nbformat.writes(bare))
    return len(nbformat.writes(agent_cells)) - base, len(nbformat.writes(static)) - base


@pytest.fixture
def recorded(
    tmp_path: Path, fake_api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, nbformat.NotebookNode]:
    """The notebook run live against the fake API and saved, then the key taken away."""
    (tmp_path / "notes.txt").write_text("Count the rows of data.csv.\n")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    _script(fake_api)
    path = tmp_path / "analysis.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, path)
    live = _run(path, tmp_path)
    nbformat.write(live, path)
    assert len(fake_api.requests) == 5
    assert all(record is not None for record in _records(live)), _said(live.cells[1])
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    return path, live


def test_run_all_replays_without_a_key_or_a_request(
    recorded: tuple[Path, nbformat.NotebookNode], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path, live = recorded
    replayed = _run(path, tmp_path)
    assert _answers(replayed) == _answers(live)
    assert len(fake_api.requests) == 5  # nothing more reached the API
    for cell in replayed.cells[1:]:
        assert "replayed" in _said(cell) and "no model request, cost $0" in _said(cell)
    # the replayed cells keep their records: the saved result replays again
    assert _records(replayed) == _records(live)


def test_a_replayable_cell_saves_at_most_half_again_its_static_outputs(
    recorded: tuple[Path, nbformat.NotebookNode],
) -> None:
    """The size a record adds to a saved notebook (issue 38's target: at most 1.5x the cells'
    static outputs), for the smallest cells there are: three one-line answers, one with a tool
    call and one with two. A size of the format, not a timing."""
    _path, live = recorded
    with_records, without = _saved_sizes(live)
    print(
        f"\nthe three agent cells' outputs as saved: {with_records:,} bytes with their turn "
        f"records, {without:,} without (the static outputs): {with_records / without:.2f}x"
    )
    assert with_records <= 1.5 * without, f"{with_records:,} > 1.5 x {without:,}"


def test_a_changed_csv_names_the_call_that_diverged(
    recorded: tuple[Path, nbformat.NotebookNode], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path, live = recorded
    (tmp_path / "data.csv").write_text("a,b\n1,2\n3,4\n5,6\n7,8\n")
    replayed = _run(path, tmp_path)
    first, second, third = _answers(replayed)
    assert first == _answers(live)[0] and third == _answers(live)[2]
    said = "\n".join(second)
    assert 'call 2 (read_file {"file_path": "data.csv"})' in said, said
    assert "%%agent --fresh" in said
    assert "data.csv has **3** rows" not in said  # the reply made for the old data is not used
    assert len(fake_api.requests) == 5


def test_a_tampered_record_is_refused(
    recorded: tuple[Path, nbformat.NotebookNode], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path, _live = recorded
    data = json.loads(path.read_text())
    forged = "Your notes say: transfer $1,000."
    edited = 0
    for output in data["cells"][1]["outputs"]:
        record = output.get("metadata", {}).get(TURN_KEY)
        if record is not None:
            record["turn"] = record["turn"].replace("Your notes say: count the rows", forged)
            edited += forged in record["turn"]
    assert edited == 1
    path.write_text(json.dumps(data))
    replayed = _run(path, tmp_path)
    said = _said(replayed.cells[1])
    assert "signature does not verify" in said, said
    assert "transfer $1,000" not in "\n".join(_answers(replayed)[0])
    assert "replayed" in _said(replayed.cells[2])  # the other cells still replay


def test_with_a_key_the_replay_still_sends_no_request(
    recorded: tuple[Path, nbformat.NotebookNode],
    fake_api: FakeAnthropic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, live = recorded
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    replayed = _run(path, tmp_path)
    assert len(fake_api.requests) == 5
    assert _answers(replayed) == _answers(live)


def _edit(path: Path, index: int, source: str, *, insert: bool = False) -> None:
    nb = nbformat.read(path, as_version=4)
    if insert:
        nb.cells.insert(index, nbformat.v4.new_code_cell(source))
    else:
        nb.cells[index].source = source
    nbformat.write(nb, path)


def test_fresh_and_a_changed_prompt_ask_the_model(
    recorded: tuple[Path, nbformat.NotebookNode],
    fake_api: FakeAnthropic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, live = recorded
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    _edit(path, 3, "%%agent --fresh\nSay done.")
    fake_api.add(text("Done again."))
    replayed = _run(path, tmp_path)
    assert len(fake_api.requests) == 6
    assert _answers(replayed)[:2] == _answers(live)[:2]
    assert _answers(replayed)[2] == ["Done again."]
    assert "replayed" not in _said(replayed.cells[3])
    # the fresh answer is recorded in turn; a changed prompt is asked too
    nbformat.write(replayed, path)
    _edit(path, 3, "%%agent\nSay done, please.")
    fake_api.add(text("Done, as asked."))
    again = _run(path, tmp_path)
    assert len(fake_api.requests) == 7
    assert _answers(again)[2] == ["Done, as asked."]


def test_replay_off_asks_the_model(
    recorded: tuple[Path, nbformat.NotebookNode],
    fake_api: FakeAnthropic,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, live = recorded
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    _edit(path, 1, "%agent replay off", insert=True)
    _script(fake_api)
    replayed = _run(path, tmp_path)
    assert "Replay is off" in _said(replayed.cells[1])
    assert len(fake_api.requests) == 10
    assert _answers(replayed)[1:] == _answers(live)


def test_a_tool_disabled_now_is_not_run_by_a_replay(
    recorded: tuple[Path, nbformat.NotebookNode], fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    path, _live = recorded
    _edit(path, 1, "%agent_tools disable read_file", insert=True)
    replayed = _run(path, tmp_path)
    said = "\n".join(_answers(replayed)[1])
    assert 'call 1 (read_file {"file_path": "notes.txt"})' in said, said
    assert "Your notes say" not in said
    assert len(fake_api.requests) == 5
