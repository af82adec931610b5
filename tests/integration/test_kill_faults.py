"""Fault injection: ``kill -9`` at random points, then reopen.

A child process writes through the public API and reports each write it was told succeeded;
the test kills it at a random moment (seeded per trial), reopens the home and checks that
nothing reported is lost and nothing is stored twice:

* conversation turns appended to SQLite (``MemoryManager.process_interaction``);
* memories written to Qdrant Edge (``LongTermMemory.store_memory``);
* ``consolidate()`` of a long session whose rounds include one that reinforces an existing
  memory: after the rerun every round is stored once and the reinforcement counted once.

``AGENTMEM_FAULT_TRIALS`` (default 3) sets the trials per case. With
``AGENTMEM_FAULT_REPORT=FILE`` the per-case totals (trials, lost, duplicated, hung) are
written to ``FILE`` as JSON.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import MemoryManager
from agentmem.long_term import LongTermMemory
from tests.fakes import HashingEmbedder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("AGENTMEM_FAULT_TRIALS", "3"))
DIM = 512
HANG_S = 60.0
TOTALS: dict[str, dict[str, int]] = {}


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    if path := os.environ.get("AGENTMEM_FAULT_REPORT"):
        old = json.loads(Path(path).read_text()) if Path(path).exists() else {}
        Path(path).write_text(json.dumps({**old, **TOTALS}, indent=2))


def tally(case: str, **counts: int) -> None:
    """Add one trial of ``case`` and its counts (lost, duplicated, ...) to the report."""
    row = TOTALS.setdefault(case, {"trials": 0, "lost": 0, "duplicated": 0, "hung": 0})
    row["trials"] += 1
    for name, value in counts.items():
        row[name] = row.get(name, 0) + value


def run_and_kill(code: str, home: Path, seed: int, *, window_s: float) -> list[str]:
    """Start ``code`` on ``home``; after its "ready" line, kill -9 it at a random moment
    within ``window_s``; return the lines it reported (its acknowledged writes)."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None
    ready = child.stdout.readline()
    assert ready.strip() == "ready", child.stderr.read() if child.stderr else ""
    time.sleep(random.Random(seed).uniform(0.0, window_s))
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=HANG_S)
    out = child.stdout.read()
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()
    return [line for line in out.splitlines() if line.strip()]


def open_manager(home: Path, session: str = "s1") -> MemoryManager:
    return MemoryManager.open(
        user_id="alice",
        session_id=session,
        home=home,
        embedder=HashingEmbedder(DIM),
        consolidate_every_tokens=None,
    )


PRELUDE = """
import sys
from agentmem import MemoryManager
from tests.fakes import HashingEmbedder
home = sys.argv[1]
mem = MemoryManager.open(user_id="alice", session_id="s1", home=home,
                         embedder=HashingEmbedder(512), consolidate_every_tokens=None)
print("ready", flush=True)
"""


def run_writes_and_kill(write: str, home: Path, seed: int) -> list[str]:
    """:func:`run_and_kill` (within 1.5 s) on a loop that runs ``write``, a statement on
    ``mem`` and ``i``, for i = 0, 1, ... and prints each ``i`` once its write returned."""
    loop = f"i = 0\nwhile True:\n    {write}\n    print(i, flush=True)\n    i += 1\n"
    return run_and_kill(PRELUDE + loop, home, seed, window_s=1.5)


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_during_sqlite_appends(tmp_path: Path, trial: int) -> None:
    acked = run_writes_and_kill(
        'mem.process_interaction(f"question {i}", f"answer {i}")', tmp_path, seed=trial
    )
    with open_manager(tmp_path) as mem:
        log = mem.short_term.get_log()
    asked = [m.content for m in log if m.role == "user"]
    answered = [m.content for m in log if m.role == "assistant"]
    lost = sum(1 for i in acked if f"question {i}" not in asked)
    duplicated = len(asked) - len(set(asked))
    tally("kill -9 during SQLite appends", lost=lost, duplicated=duplicated)
    assert lost == duplicated == 0
    # A turn is one atomic append: never a question without its answer.
    assert [q.removeprefix("question ") for q in asked] == [
        a.removeprefix("answer ") for a in answered
    ]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_during_edge_writes(tmp_path: Path, trial: int) -> None:
    acked = run_writes_and_kill(
        'mem.long_term.store_memory(f"fact number {i} about sailing", "semantic")',
        tmp_path,
        seed=100 + trial,
    )
    memory = LongTermMemory.open(user_id="alice", home=tmp_path, embedder=HashingEmbedder(DIM))
    try:
        contents = [r.content for r in memory.all_records()]
    finally:
        memory.close()
    lost = sum(1 for i in acked if f"fact number {i} about sailing" not in contents)
    duplicated = len(contents) - len(set(contents))
    tally("kill -9 during Qdrant Edge writes", lost=lost, duplicated=duplicated)
    assert lost == duplicated == 0


ROUNDS = 120  # about 0.6 s of consolidation here: most kills land inside it


def question(i: int) -> str:
    return f"question q{i}a q{i}b q{i}c"


def answer(i: int) -> str:
    return f"answer r{i}a r{i}b"


def round_text(i: int) -> str:
    return f"user: {question(i)}\nassistant: {answer(i)}"


@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_during_consolidation_then_rerun(tmp_path: Path, trial: int) -> None:
    with open_manager(tmp_path) as mem:
        for i in range(ROUNDS):
            mem.process_interaction(question(i), answer(i))
        # An existing memory equal to round 7: consolidating round 7 reinforces it.
        seeded = mem.remember(round_text(7), "episodic").record
    reported = run_and_kill(
        PRELUDE
        + """
mem.consolidate()
print("done", flush=True)
""",
        tmp_path,
        seed=200 + trial,
        window_s=0.6,
    )
    with open_manager(tmp_path) as mem:
        mem.consolidate()
        assert mem.consolidate().written == 0
        records = mem.long_term.all_records()
    contents = [r.content for r in records]
    expected = {round_text(i) for i in range(ROUNDS)}
    lost = len(expected - set(contents))
    duplicated = len(contents) - len(set(contents))
    (again,) = [r for r in records if r.id == seeded.id]
    reinforced_twice = int(again.access_count != 1)
    tally(
        "kill -9 during consolidate(), then rerun",
        lost=lost,
        duplicated=duplicated,
        reinforced_twice=reinforced_twice,
        killed_before_done=int("done" not in reported),
    )
    assert lost == duplicated == 0
    assert again.access_count == 1
