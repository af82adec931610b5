"""Hybrid search by score fusion (private): one algorithm, any store.

:func:`fusion_plan` is a generator that asks for scores and records and returns the ranked
hits (see :mod:`agentmem.long_term.ranking` for the formula and the floor):

1. the dense and the BM25 candidate lists (ids and raw scores only);
2. which candidates fall in a period the query names (temporal boost);
3. the exact score on the other side of a candidate missing from a list cut at
   ``candidates``, when it could reach the best ``fetch`` with it (so no score that
   matters is guessed);
4. the records of the best ``fetch`` candidates by base score, for the importance and
   recency boosts, the floor and the result.

A store answers its requests in :meth:`MemoryStore.fused_search`. The Qdrant stores turn
them into payload-free Qdrant queries (:mod:`agentmem.stores.qdrant._fused`), so only the
final records are read and parsed; any other store can reuse :func:`fused_search_program`,
which answers them with its public ``search`` and ``get``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agentmem._sansio import Program, call
from agentmem.long_term.ranking import (
    RankingConfig,
    above_floor,
    base_scores,
    boost_parts,
    dense_clear_winner,
    order_hits,
)
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import (
    FusionPlan,
    MemoryStore,
    RecordRequest,
    ScoredRecord,
    ScoreRequest,
    SparseVector,
)
from agentmem.long_term.temporal import Window

__all__ = ["fused_search_program", "fusion_plan"]


def fusion_plan(
    config: RankingConfig,
    *,
    has_sparse: bool,
    candidates: int,
    fetch: int,
    now: datetime,
    windows: Sequence[Window],
    explain: bool,
    top_k: int | None = None,
) -> FusionPlan:
    """The fused hits above the floor, best first, at most ``fetch`` of them; with
    ``top_k``, the final ``top_k`` of those (:meth:`RankingConfig.finish`: diversified
    with the vectors read along with the records when the config diversifies)."""
    first: tuple[ScoreRequest, ...] = (ScoreRequest("dense", candidates),)
    if has_sparse:
        first += (ScoreRequest("sparse", candidates),)
    answers: list[dict[str, float]] = yield first
    dense, sparse = answers[0], answers[1] if has_sparse else {}
    winner = dense_clear_winner(dense)  # the floor keeps it (before fills add scores)
    pool = list(dict.fromkeys([*dense, *sparse]))
    if not pool:
        return []
    dated: set[str] = set()
    if config.temporal_weight:
        for window in windows:
            found = yield ScoreRequest("dense", len(pool), tuple(pool), window)
            dated.update(found)
    temporal = {i: config.temporal_weight if i in dated else 0.0 for i in pool}
    # A list cut at `candidates` may lack a score its other side found; a list shorter than
    # that holds every memory with a score on that side (the others score 0 there). A
    # missing score lies between 0 and the list's lowest: ask for it exactly only when the
    # candidate could reach the best `fetch` with it (threshold algorithm).
    cut = {
        "dense": len(dense) >= candidates,
        "sparse": has_sparse and len(sparse) >= candidates,
    }
    fill = {
        "dense": min(dense.values()) if cut["dense"] and dense else 0.0,
        "sparse": min(sparse.values()) if cut["sparse"] and sparse else 0.0,
    }
    lower = base_scores(dense, sparse, config.dense_weight)
    if fill["dense"] > 0 or fill["sparse"] > 0:
        upper = base_scores(
            {i: dense.get(i, fill["dense"]) for i in pool},
            {i: sparse.get(i, fill["sparse"]) for i in pool},
            config.dense_weight,
            tops=(max(dense.values(), default=0.0), max(sparse.values(), default=0.0)),
        )
        floor_at = sorted((lower[i] + temporal[i] for i in pool), reverse=True)
        threshold = floor_at[fetch - 1] if len(floor_at) >= fetch else float("-inf")
        open_ = [i for i in pool if upper[i] + temporal[i] >= threshold and upper[i] > lower[i]]
        fills: list[tuple[ScoreRequest, dict[str, float]]] = []
        for side, scores in (("dense", dense), ("sparse", sparse)):
            missing = tuple(i for i in open_ if i not in scores)
            if cut[side] and missing:
                fills.append((ScoreRequest(side, len(missing), missing), scores))  # type: ignore[arg-type]
        if fills:
            found = yield tuple(request for request, _ in fills)
            for (_, scores), more in zip(fills, found, strict=True):
                scores.update(more)
    base = base_scores(dense, sparse, config.dense_weight)
    best = max(base.values())
    kept = [
        i
        for i in pool
        if i == winner or above_floor(config, base[i], best, dense.get(i, 0.0), sparse.get(i, 0.0))
    ]
    kept.sort(key=lambda i: (-(base[i] + temporal[i]), i))
    chosen = tuple(kept[:fetch])
    if not chosen:
        return []
    with_vectors = top_k is not None and config.diversifies
    rows: dict[str, Any] = yield RecordRequest(chosen, with_vectors)
    hits = []
    vectors: list[list[float]] = []
    for i in chosen:
        row = rows.get(i)
        if row is None:  # deleted between the two reads
            continue
        record: MemoryRecord = row[0] if with_vectors else row
        if with_vectors:
            vectors.append(row[1])
        importance, recency = boost_parts(config, record, now)
        score = base[i] + temporal[i] + importance + recency
        parts: dict[str, float] = {}
        if explain:
            parts = {
                "dense": dense.get(i, 0.0),
                "sparse": sparse.get(i, 0.0),
                "fused": base[i],
                "base": base[i],
                "temporal_boost": temporal[i],
                "importance_boost": importance,
                "recency_boost": recency,
                "final": score,
            }
        hits.append(ScoredRecord(record, score, parts))
    by_id = dict(zip((h.record.id for h in hits), vectors, strict=with_vectors))
    hits = order_hits(hits)
    if top_k is None:
        return hits
    return config.finish(
        hits, [by_id[h.record.id] for h in hits] if by_id else [], top_k, explain=explain
    )


def _search_kwargs(
    request: ScoreRequest,
    flt: RecordFilter,
    dense: Sequence[float],
    sparse: SparseVector | None,
) -> dict[str, Any]:
    updates: dict[str, Any] = {}
    if request.ids is not None:
        updates["ids"] = request.ids
    if request.window is not None:
        updates["created_after"], updates["created_before"] = request.window
    return {
        "dense": dense if request.side == "dense" else None,
        "sparse": sparse if request.side == "sparse" else None,
        "filter": flt.model_copy(update=updates) if updates else flt,
        "limit": request.limit,
        "candidates": request.limit,
        "exact": request.ids is not None,
    }


def fused_search_program(
    store: MemoryStore,
    scope: Scope,
    flt: RecordFilter,
    dense: Sequence[float],
    sparse: SparseVector | None,
    plan: FusionPlan,
) -> Program[list[ScoredRecord]]:
    """Answer ``plan`` through the public ``search``/``get`` of any :class:`MemoryStore`
    (the generic :meth:`MemoryStore.fused_search`); run it with ``drive``/``adrive``."""
    seen: dict[str, MemoryRecord] = {}
    request = next(plan)
    while True:
        answer: Any
        if not isinstance(request, RecordRequest):  # a ScoreRequest or a tuple of them
            scored = []
            for one in (request,) if isinstance(request, ScoreRequest) else request:
                kwargs = _search_kwargs(one, flt, dense, sparse)
                hits = yield from call(store.search, store.asearch, scope, **kwargs)
                seen.update((h.record.id, h.record) for h in hits)
                scored.append({h.record.id: h.score for h in hits})
            answer = scored[0] if isinstance(request, ScoreRequest) else scored
        else:
            missing = [i for i in request.ids if i not in seen]
            if missing:
                found = yield from call(store.get, store.aget, scope, missing)
                seen.update((r.id, r) for r in found)
            answer = {i: seen[i] for i in request.ids if i in seen}
            if request.vectors:
                ids = list(answer)
                vectors = yield from call(store.get_vectors, store.aget_vectors, scope, ids)
                answer = {i: (answer[i], vectors[i]) for i in ids if i in vectors}
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            result: list[ScoredRecord] = stop.value
            return result
