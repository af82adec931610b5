"""The embedder identity of a home with the real local model, and ``agentmem reembed``.

A home written with all-MiniLM-L6-v2 refuses another model of the same dimension (the
hashing embedder of ``tests/fake_embedder.py`` at 384 dimensions, under its own name); a
home of the previous version (no record) adopts its first opener; ``agentmem reembed``
moves a home to the real model, and a run killed with SIGKILL mid-way, then run again,
ends with exactly the store an uninterrupted run makes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentmem import MemoryService
from agentmem.embeddings import default_embedder
from agentmem.errors import EmbedderMismatchError
from agentmem.long_term import LongTermMemory, RecordFilter
from agentmem.long_term.records import Scope
from agentmem.stores.qdrant._edge_embedder import EMBEDDER_FILE
from agentmem.stores.qdrant.edge import QdrantEdgeStore
from tests.fake_embedder import HashingEmbedder

pytestmark = pytest.mark.integration

DIM = 384
OTHER = HashingEmbedder(DIM, model_name="hashing-384")
ALL = RecordFilter(include_history=True)
FACTS = [
    "I am vegetarian.",
    "My cat is called Miso.",
    "I moved to Lisbon last spring.",
    "I drink my coffee black.",
    "My sister Ana's birthday is on March 3.",
]
USERS = ("alice", "bob", "carol")


def _fill(home: Path, embedder: Any, copies: int = 3) -> None:
    for user in USERS:
        memory = LongTermMemory.open(user_id=user, home=home, embedder=embedder)
        try:
            memory.store_records(
                [
                    memory.new_record(f"{fact} ({user}, note {n})", "semantic")
                    for fact in FACTS
                    for n in range(copies)
                ]
            )
        finally:
            memory.close()


def _snapshot(home: Path) -> dict[str, tuple[dict[str, Any], list[float]]]:
    store = QdrantEdgeStore(home / "long_term", dimension=DIM)
    try:
        out = {}
        for user in USERS:
            records, _ = store.scroll(Scope(user_id=user), filter=ALL, limit=1000)
            vectors = store.get_vectors(Scope(user_id=user), [r.id for r in records])
            for record in records:
                out[record.id] = (record.model_dump(mode="json"), vectors[record.id])
        return out
    finally:
        store.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentmem.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_a_home_of_the_local_model_refuses_another_model_of_its_size(tmp_path: Path) -> None:
    _fill(tmp_path, default_embedder(), copies=1)
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        LongTermMemory.open(user_id="alice", home=tmp_path, embedder=OTHER)
    with pytest.raises(EmbedderMismatchError):
        MemoryService.open(tmp_path, embedder=OTHER)
    # The home is left as it was: the right model still reads everything.
    memory = LongTermMemory.open(user_id="alice", home=tmp_path)
    try:
        assert memory.count_memories() == len(FACTS)
    finally:
        memory.close()


def test_a_home_of_the_previous_version_adopts_its_first_opener(tmp_path: Path) -> None:
    _fill(tmp_path, OTHER, copies=1)
    (tmp_path / "long_term" / EMBEDDER_FILE).unlink()  # as the previous version left it
    memory = LongTermMemory.open(user_id="alice", home=tmp_path)  # the local model
    memory.close()
    assert (tmp_path / "long_term" / EMBEDDER_FILE).is_file()
    with pytest.raises(EmbedderMismatchError):
        LongTermMemory.open(user_id="alice", home=tmp_path, embedder=OTHER)


_KILLED_RUN = textwrap.dedent(
    """
    import os, signal, sys
    from agentmem.embeddings import SentenceTransformerEmbedder
    from agentmem.long_term.reembed import reembed
    from agentmem.stores.qdrant.edge import QdrantEdgeStore

    store = QdrantEdgeStore(sys.argv[1], dimension=384)

    def progress(done, total):
        if done >= int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9, mid-way

    reembed(store, SentenceTransformerEmbedder(), batch_size=8, on_progress=progress)
    """
)


def test_reembed_killed_mid_way_then_rerun_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    home, twin = tmp_path / "home", tmp_path / "twin"
    _fill(home, OTHER)
    shutil.copytree(home, twin)
    before = _snapshot(home)
    total = len(before)

    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN, str(home / "long_term"), "16"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # Mid-way, neither model may open the home.
    for embedder in (OTHER, default_embedder()):
        with pytest.raises(EmbedderMismatchError, match="agentmem reembed") as caught:
            LongTermMemory.open(user_id="alice", home=home, embedder=embedder)
        assert caught.value.reembedding

    resumed = _cli("--home", str(home), "reembed", "--batch-size", "8")
    assert resumed.returncode == 0, resumed.stderr
    assert f"re-embedded {total} memories" in resumed.stdout
    assert "finished an interrupted run" in resumed.stdout
    straight = _cli("reembed", "--home", str(twin), "--batch-size", "8")
    assert straight.returncode == 0, straight.stderr

    after, expected = _snapshot(home), _snapshot(twin)
    assert after == expected  # records and vectors, exactly
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    assert all(after[k][1] != before[k][1] for k in after)  # every vector was rewritten

    # The home is now the local model's: it recalls by meaning, and the old model is refused.
    memory = LongTermMemory.open(user_id="alice", home=home)
    try:
        hits = memory.retrieve_memories("Where do I live?", top_k=3, mode="dense", touch=False)
        assert "Lisbon" in hits[0].record.content
    finally:
        memory.close()
    with pytest.raises(EmbedderMismatchError):
        LongTermMemory.open(user_id="alice", home=home, embedder=OTHER)
    again = _cli("reembed", "--home", str(home))
    assert again.returncode == 0
    assert "nothing to do" in again.stdout


def test_reembed_with_another_dimension_is_refused_before_anything_changes(
    tmp_path: Path,
) -> None:
    _fill(tmp_path, HashingEmbedder(16, model_name="tiny"), copies=1)
    result = _cli("reembed", "--home", str(tmp_path))
    assert result.returncode == 1
    assert "16-dimensional" in result.stderr or "dimension" in result.stderr, result.stderr


def test_a_backup_carries_the_identity_to_the_restored_home(tmp_path: Path) -> None:
    home, backup, restored = tmp_path / "home", tmp_path / "backup", tmp_path / "restored"
    _fill(home, OTHER, copies=1)
    MemoryService.open(home, embedder=OTHER).close()  # a whole home: the sessions too
    made = _cli("--home", str(home), "backup", str(backup))
    assert made.returncode == 0, made.stderr
    result = _cli("--home", str(restored), "restore", str(backup))
    assert result.returncode == 0, result.stderr
    with pytest.raises(EmbedderMismatchError, match="hashing-384"):
        LongTermMemory.open(user_id="alice", home=restored, embedder=default_embedder())
    memory = LongTermMemory.open(user_id="alice", home=restored, embedder=OTHER)
    try:
        assert memory.count_memories() == len(FACTS)
    finally:
        memory.close()
