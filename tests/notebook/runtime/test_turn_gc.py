"""Full garbage collections of the kernel's older heap are kept out of a ``%%agent`` turn
(``turn_gc.py``; benchmark figure 19's tail), in a real ``InteractiveShell`` with the offline
model replaying a burst of main-thread ``run_python`` calls, and the collector is left as it was
after the cell, however the cell ended."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_agent.notebook.front.cell_turn import CellTurn
from jupyter_agent.notebook.front.extension import get_magics
from jupyter_agent.notebook.front.magics import AgentMagics
from jupyter_agent.notebook.front.turn_options import TurnOptions
from jupyter_agent.notebook.runtime.turn_gc import IDLE_S, TurnGC, collect_after_cell

CALLS = 12
#: Each call keeps this many new objects alive: together more than a quarter of the process's
#: older heap, which is what sets off a full collection in CPython.
KEPT_PER_CALL = 25_000


def _burst_cassette(path: Path, code: str, calls: int = CALLS) -> None:
    uses = [
        {"type": "tool_use", "id": f"toolu_{i:02d}", "name": "run_python", "input": {"code": code}}
        for i in range(calls)
    ]
    exchanges = [
        {
            "prompt": "burst",
            "responses": [
                {"content": [{"type": "text", "text": "Running."}, *uses]},
                {"content": "Done."},
            ],
        }
    ]
    path.write_text(json.dumps(exchanges), encoding="utf-8")


#: Set in the fresh process that runs a heap-sized test (see ``_in_a_fresh_process``).
FRESH = "JUPYTER_AGENT_TEST_FRESH_HEAP"


def _in_a_fresh_process(request: pytest.FixtureRequest) -> bool:
    """Whether this is a fresh interpreter. A test whose verdict depends on the heap's size (when
    CPython's next full collection is due) runs itself again in one: in the whole suite the heap
    the earlier tests left decides otherwise (824,000 objects made the turns' survivors too few
    to be due). Returns False in the suite's process, after the fresh run passed."""
    if os.environ.get(FRESH) == "1":
        return True
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{Path(__file__).resolve()}::{request.node.name}"],
        env={**os.environ, FRESH: "1"},
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return False


@pytest.fixture
def magics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentMagics]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ip = InteractiveShell.instance()
    ip.config.pop("AgentMagics", None)
    ip.run_line_magic("load_ext", "jupyter_agent")
    found = get_magics(ip)
    assert isinstance(found, AgentMagics)
    found.workspace = str(tmp_path)
    found.provider = "offline"
    cassette = tmp_path / "burst.json"
    _burst_cassette(cassette, f"_kept.append([[] for _ in range({KEPT_PER_CALL})])")
    found.offline_cassette = str(cassette)
    ip.user_ns["_kept"] = []
    ip.run_line_magic("agent_tools", "enable run_python")
    ip.run_line_magic("agent_tools", "policy run_python allow")
    yield found
    ip.user_ns.pop("_kept", None)
    ip.run_line_magic("unload_ext", "jupyter_agent")
    ip.config.pop("AgentMagics", None)


def _frozen() -> int:
    """How many objects someone froze: the permanent generation less the immortal objects CPython
    3.12's collector moves there itself (3.11 and 3.13 move none; see ``turn_gc``'s docstring).
    Finds them by thawing the permanent generation: call it only where nothing should be frozen.

    ``unfreeze`` puts them in the oldest generation, so only that one is compared; and no other
    thread runs meanwhile (a long switch interval): a thread an earlier test left allocating
    would otherwise add objects between the two looks that count as thawed (seen on 3.12, once
    in a few hundred looks, with another thread making dicts)."""
    if not gc.get_freeze_count():
        return 0
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        before = gc.get_objects(2)
        seen = {id(o) for o in before}
        gc.unfreeze()
        thawed = [
            o
            for o in gc.get_objects(2)
            if id(o) not in seen and o is not seen and o is not before  # (made here since)
        ]
    finally:
        sys.setswitchinterval(interval)
    return sum(not _immortal(o) for o in thawed)


def _immortal(obj: object) -> bool:
    is_immortal = getattr(sys, "_is_immortal", None)  # 3.14
    if is_immortal is not None:
        return bool(is_immortal(obj))
    return sys.getrefcount(obj) >= 2**31  # 3.12, 3.13: a count no mortal object reaches


class _FullCollections:
    """A ``gc.callbacks`` entry: each full collection's duration and whether the objects older
    than the turn were left out of it (frozen as it began: 3.12 moves the immortal objects it
    meets into the permanent generation during the collection)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, int]] = []
        self._started = 0.0
        self._frozen = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
            self._frozen = gc.get_freeze_count()
        else:
            self.seen.append(((time.perf_counter() - self._started) * 1e3, self._frozen))

    def __enter__(self) -> _FullCollections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def test_no_full_collection_of_the_older_heap_during_a_burst_of_tool_calls(
    magics: AgentMagics, request: pytest.FixtureRequest
) -> None:
    if not _in_a_fresh_process(request):
        return
    gc.collect()
    older = len(gc.get_objects())
    thresholds = gc.get_threshold()
    turn = CellTurn(magics.session, magics.shell, rich=False, render_interval=0.05)
    with _FullCollections() as full, capture_output():
        outcome = turn.run("burst")
    assert not outcome.interrupted
    assert len(magics.shell.user_ns["_kept"]) == CALLS  # every call ran, in this process
    # in a terminal (no event loop) the deferred full collection runs as the turn ends: last
    assert full.seen, "no full collection was due in the burst: the test shows nothing"
    during, after = full.seen[:-1], full.seen[-1]
    whole_heap = [ms for ms, frozen in during if frozen < older // 2]
    assert not whole_heap, (
        f"{len(whole_heap)} full collection(s) of the whole heap ({older} objects) during the "
        f"turn, {max(whole_heap):.0f} ms at most"
    )
    assert during, "no full collection of the turn's own objects during the burst"
    assert turn.gc.deferred and after[1] == 0  # the deferred one, of the whole heap, last
    # the collector is as it was: nothing frozen, the same thresholds, still on
    assert _frozen() == 0
    assert gc.get_threshold() == thresholds
    assert gc.isenabled()


def test_the_collector_is_restored_when_the_turn_fails_or_is_interrupted(
    magics: AgentMagics, tmp_path: Path
) -> None:
    thresholds = gc.get_threshold()
    cassette = tmp_path / "interrupt.json"
    _burst_cassette(cassette, "raise KeyboardInterrupt")
    magics.offline_cassette = str(cassette)
    turn = CellTurn(magics.session, magics.shell, rich=False, render_interval=0.05)
    with capture_output():
        outcome = turn.run("burst")  # the first call's KeyboardInterrupt stops the turn
    assert outcome.interrupted
    assert _frozen() == 0
    assert gc.get_threshold() == thresholds

    turn = CellTurn(magics.session, magics.shell, rich=False, render_interval=0.05)
    with pytest.raises(UsageError, match="chat name"), capture_output():
        turn.run("burst", TurnOptions(chat="no such chat!"))
    assert _frozen() == 0
    assert gc.get_threshold() == thresholds

    with pytest.raises(KeyboardInterrupt), TurnGC():
        assert gc.get_freeze_count() > 0
        raise KeyboardInterrupt
    assert _frozen() == 0
    assert gc.get_threshold() == thresholds


def test_the_users_own_freeze_and_a_disabled_collector_are_left_alone() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with TurnGC() as deferral:
            assert not deferral.frozen
        assert gc.get_freeze_count() == frozen  # not thawed under the user
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with TurnGC() as deferral:
            assert not deferral.frozen and gc.get_freeze_count() == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Cycle:
    def __init__(self) -> None:
        self.me = self
        self.ballast = bytearray(8 * 1024 * 1024)


def test_a_turn_that_grows_past_the_bound_collects_the_older_heap_at_once() -> None:
    """Garbage among objects older than the turn waits for its end — unless the process grew
    past the bound: then it is collected in the turn and nothing stays frozen."""
    old = _Cycle()
    gone = weakref.ref(old)
    with TurnGC(max_growth=16 * 1024 * 1024, check_every=0.0) as deferral:
        assert deferral.frozen
        del old
        gc.collect()
        assert gone() is not None  # frozen: held until the turn ends
        grown = [bytearray(64 * 1024 * 1024)]
        grown[0][::4096] = b"x" * len(grown[0][::4096])  # touch the pages: resident
        deferral.check()
        assert deferral.thawed_early and not deferral.frozen
        assert _frozen() == 0
        assert gone() is None  # collected during the turn
    assert _frozen() == 0


class Cyc:
    """A cycle with ballast: garbage only a full collection frees once its turn is over."""

    me: Cyc
    ballast: list[list[int]]


def test_dead_cycles_older_than_a_turn_are_freed_in_a_session_of_only_turns(
    magics: AgentMagics, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Objects that outlive a turn reach the old generation through ``unfreeze``, where CPython
    does not count them toward its next full collection: without ``turn_gc``'s own count, a
    session of only turns held every dead cycle (the closed views of every cell)."""
    if not _in_a_fresh_process(request):
        return
    turns, ballast = 12, 10_000
    cassette = tmp_path / "cycles.json"
    code = (
        f"c = Cyc(); c.me = c; c.ballast = [[] for _ in range({ballast})]; "
        "_refs.append(weakref.ref(c))"
    )
    _burst_cassette(cassette, code, calls=1)
    magics.offline_cassette = str(cassette)
    magics.shell.user_ns.update(Cyc=Cyc, weakref=weakref, _refs=[])
    gc.collect()
    older = len(gc.get_objects())
    assert turns * ballast > older // 4  # together, reason enough for a full collection
    with _FullCollections() as full, capture_output():
        for _ in range(turns):
            assert (
                not CellTurn(magics.session, magics.shell, rich=False, render_interval=0.05)
                .run("burst")
                .interrupted
            )
    refs = magics.shell.user_ns["_refs"]
    assert len(refs) == turns
    held = sum(ref() is not None for ref in refs[:-1])  # every cycle but the last one is dead
    assert held < turns // 2, f"{held} dead cycles of {turns - 1} still held after {turns} turns"
    assert any(not frozen for _ms, frozen in full.seen)  # the whole heap was collected
    for name in ("Cyc", "weakref", "_refs", "c"):
        magics.shell.user_ns.pop(name, None)


def test_the_deferred_collection_waits_until_no_turn_has_begun_for_a_while() -> None:
    """On the kernel's loop the deferred full collection waits for a quiet spell: a cell run
    right after (Run All, a burst) starts without it, so a click as that cell starts is not
    held up by a whole-heap collection (figure 19's last tail: 134 ms). On the old code it ran
    at the loop's next turn, before the next cell."""

    async def main() -> tuple[float, list[float]]:
        collected: list[float] = []

        def note(phase: str, info: dict[str, Any]) -> None:
            if phase == "stop" and info["generation"] == 2:
                collected.append(time.monotonic())

        gc.callbacks.append(note)
        gc.disable()  # no collection but the one under test
        try:
            collect_after_cell()
            with TurnGC():  # the next cell's turn begins (and ends) before the loop runs again
                pass
            turn_ended = time.monotonic()
            for _ in range(100):
                await asyncio.sleep(0.05)
                if collected:
                    break
            return turn_ended, collected
        finally:
            gc.enable()
            gc.callbacks.remove(note)

    turn_ended, collected = asyncio.run(main())
    assert len(collected) == 1, collected
    assert collected[0] - turn_ended >= IDLE_S  # a whole quiet spell after the last turn


def test_turns_back_to_back_postpone_the_collection_only_so_long() -> None:
    async def main() -> int:
        collected = 0

        def note(phase: str, info: dict[str, Any]) -> None:
            nonlocal collected
            collected += phase == "stop" and info["generation"] == 2

        gc.callbacks.append(note)
        gc.disable()
        try:
            collect_after_cell(idle_s=0.1, max_postpone_s=0.3)
            deadline = time.monotonic() + 2.0
            while not collected and time.monotonic() < deadline:
                with TurnGC():  # a turn every 20 ms: never a quiet spell of 0.1 s
                    pass
                await asyncio.sleep(0.02)
            return collected
        finally:
            gc.enable()
            gc.callbacks.remove(note)

    assert asyncio.run(main()) == 1


class _ImportsSeen:
    """A ``sys.meta_path`` entry that finds nothing: it notes, for each of the package's modules
    imported while it is in place, whether the older heap was frozen then."""

    def __init__(self) -> None:
        self.frozen_at: dict[str, int] = {}

    def find_spec(self, name: str, path: object, target: object = None) -> None:
        if name.startswith("jupyter_agent") and name not in sys.modules:
            self.frozen_at.setdefault(name, gc.get_freeze_count())
        return None

    def __enter__(self) -> _ImportsSeen:
        sys.meta_path.insert(0, self)  # type: ignore[arg-type]
        return self

    def __exit__(self, *exc: object) -> None:
        sys.meta_path.remove(self)  # type: ignore[arg-type]


def test_a_first_cell_builds_its_session_with_the_older_heap_frozen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A fresh kernel's first ``%%agent`` cell imports the session, the agent, the provider and
    the SDK before its turn begins: full collections set off by those imports walked the whole
    heap (IPython's and the kernel's objects too), on the first token's path (figure 18)."""
    if not _in_a_fresh_process(request):
        return
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_agent")
    magics = get_magics(ip)
    assert isinstance(magics, AgentMagics)
    magics.workspace = str(tmp_path)
    magics.provider = "offline"
    try:
        with _ImportsSeen() as seen, capture_output():
            ip.run_cell_magic("agent", "", "Say hi")
        assert seen.frozen_at, "the first cell imported nothing of the package: shows nothing"
        unfrozen = sorted(name for name, frozen in seen.frozen_at.items() if not frozen)
        assert not unfrozen, f"imported with nothing frozen: {unfrozen}"
        assert _frozen() == 0  # and thawed after the cell
    finally:
        ip.run_line_magic("unload_ext", "jupyter_agent")
