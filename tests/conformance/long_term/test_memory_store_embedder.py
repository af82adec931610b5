"""Every long-term store records whose vectors it holds, and can be re-embedded.

Two deterministic embedders of one dimension with different identities (the hashing
embedder of ``tests/fake_embedder.py`` under two names, so their vectors differ as well:
the second one rotated by one bucket so that their vectors differ too) stand for two
models.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agentmem.errors import EmbedderMismatchError
from agentmem.long_term import LongTermMemory, RecordFilter
from agentmem.long_term.embedder_record import read_record
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.reembed import ReembedReport, areembed, reembed
from agentmem.long_term.store import MemoryStore
from tests.conformance._async_face import _background_loop
from tests.conformance.long_term.memory_store_backends import DIM, MemorySpec
from tests.fake_embedder import HashingEmbedder


class Shifted(HashingEmbedder):
    """Another model: the hashing vector rotated by one bucket."""

    def vector(self, text: str) -> list[float]:
        v = super().vector(text)
        return v[1:] + v[:1]


OLD = HashingEmbedder(DIM, model_name="model-old")
NEW = Shifted(DIM, model_name="model-new")
ALL = RecordFilter(include_history=True)
USERS = ("ann", "bob")
TEXTS = [f"{user} note {i}: likes topic {i % 5}" for user in USERS for i in range(11)]


def _raw(store: MemoryStore) -> Any:
    return getattr(store, "store", store)  # the store under an AsyncFace


def _reembed(spec: MemorySpec, store: MemoryStore, embedder: Any, **kw: Any) -> ReembedReport:
    raw = _raw(store)
    if spec.mode == "async":
        job = areembed(raw, embedder, **kw)
        return asyncio.run_coroutine_threadsafe(job, _background_loop()).result()
    return reembed(raw, embedder, **kw)


def _memory(store: MemoryStore, embedder: Any, user: str = "ann") -> LongTermMemory:
    return LongTermMemory(store=_raw(store), embedder=embedder, user_id=user, on_close=lambda: None)


def _fill(store: MemoryStore) -> None:
    for user in USERS:
        memory = _memory(store, OLD, user)
        memory.store_records(
            [memory.new_record(t, "semantic") for t in TEXTS if t.startswith(user)]
        )
    # A superseded memory is re-embedded too (history included).
    ann = _memory(store, OLD)
    first = min(ann.all_records(), key=lambda r: r.content)  # note 0, never the probed note 3
    ann.update_fields([first.id], {"valid_to": first.created_at})


def _snapshot(store: MemoryStore) -> dict[str, tuple[dict[str, Any], list[float]]]:
    raw, out = _raw(store), {}
    for user in USERS:
        scope = Scope(user_id=user)
        records, _ = raw.scroll(scope, filter=ALL, limit=1000)
        vectors = raw.get_vectors(scope, [r.id for r in records])
        for record in records:
            out[record.id] = (record.model_dump(mode="json"), vectors[record.id])
    return out


def _close_to(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(abs(x - y) < 1e-6 for x, y in zip(a, b, strict=True))


def test_the_first_opener_is_adopted_and_another_model_refused(memory_store: MemoryStore) -> None:
    raw = _raw(memory_store)
    assert raw.read_embedder_record() is None
    _memory(memory_store, OLD)
    assert read_record(raw).identity is not None
    assert read_record(raw).identity.model == "model-old"  # type: ignore[union-attr]
    _memory(memory_store, HashingEmbedder(DIM, model_name="model-old"))  # the same model
    with pytest.raises(EmbedderMismatchError, match="model-old") as caught:
        _memory(memory_store, NEW)
    assert caught.value.stored is not None
    assert caught.value.stored["model"] == "model-old"
    assert not caught.value.reembedding


def test_the_identity_survives_a_reopen(memory_spec: MemorySpec) -> None:
    store = memory_spec.open()
    _memory(store, OLD).store_memory("tabs, not spaces", "semantic")
    if not memory_spec.reopenable:
        store.close()
        pytest.skip("an in-memory store's memories live in one object: nothing to reopen")
    store.close()
    store = memory_spec.open()
    try:
        with pytest.raises(EmbedderMismatchError):
            _memory(store, NEW)
        assert _memory(store, OLD).count_memories() == 1
    finally:
        store.close()


def test_a_store_without_a_record_adopts_its_first_opener_silently(
    memory_store: MemoryStore,
) -> None:
    # What a store written by an agentmem that recorded only the dimension looks like.
    record = MemoryRecord.new("written before identities", "semantic", scope=Scope(user_id="ann"))
    from agentmem.sparse import Bm25Encoder

    sparse = Bm25Encoder().encode_documents([record.content])
    _raw(memory_store).upsert([record], [NEW.vector(record.content)], sparse)
    assert _raw(memory_store).read_embedder_record() is None
    assert _memory(memory_store, NEW).count_memories() == 1
    with pytest.raises(EmbedderMismatchError):
        _memory(memory_store, OLD)


def test_reembed_rewrites_every_vector_and_nothing_else(
    memory_spec: MemorySpec, memory_store: MemoryStore
) -> None:
    _fill(memory_store)
    before = _snapshot(memory_store)
    seen: list[tuple[int, int]] = []
    report = _reembed(
        memory_spec, memory_store, NEW, batch_size=4, on_progress=lambda *p: seen.append(p)
    )
    assert (report.memories, report.total, report.resumed) == (len(TEXTS), len(TEXTS), False)
    assert seen[0] == (0, len(TEXTS))
    assert seen[-1] == (len(TEXTS), len(TEXTS))
    after = _snapshot(memory_store)
    assert after.keys() == before.keys()
    for memory_id, (record, vector) in after.items():
        assert record == before[memory_id][0]  # records unchanged, history included
        assert _close_to(vector, NEW.vector(record["content"]))
    with pytest.raises(EmbedderMismatchError):
        _memory(memory_store, OLD)
    query = "ann note 3: likes topic 3"  # its new vector is exactly the query's
    hits = memory_store.search(Scope(user_id="ann"), dense=NEW.vector(query), limit=len(TEXTS))
    assert query in [h.record.content for h in hits if h.score > 0.999]  # (8 buckets collide)
    # Nothing left to do: a second run changes nothing.
    assert _reembed(memory_spec, memory_store, NEW).memories == 0


class Crash(Exception):
    pass


def test_an_interrupted_reembed_locks_both_models_out_and_resumes_exactly(
    memory_spec: MemorySpec, memory_store: MemoryStore
) -> None:
    _fill(memory_store)

    crashed_at: list[int] = []

    def crash_after_three(done: int, total: int) -> None:
        if done >= 12:
            crashed_at.append(done)  # 15: ann's 11 in batches of 4, 3; then bob's first 4
            raise Crash

    with pytest.raises(Crash):
        _reembed(memory_spec, memory_store, NEW, batch_size=4, on_progress=crash_after_three)
    for model in (OLD, NEW):
        with pytest.raises(EmbedderMismatchError, match="reembed") as caught:
            _memory(memory_store, model)
        assert caught.value.reembedding
    third = HashingEmbedder(DIM, model_name="model-third")
    with pytest.raises(EmbedderMismatchError, match="unfinished"):
        _reembed(memory_spec, memory_store, third)
    report = _reembed(memory_spec, memory_store, NEW, batch_size=4)
    assert report.resumed
    assert report.total == len(TEXTS)
    assert report.memories == len(TEXTS) - crashed_at[0]
    for record, vector in _snapshot(memory_store).values():
        assert _close_to(vector, NEW.vector(record["content"]))
    assert _memory(memory_store, NEW).count_memories(ALL) == 11
