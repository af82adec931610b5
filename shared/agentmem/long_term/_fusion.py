"""Any :class:`~agentmem.long_term.store.MemoryStore` answers a ranking plan (private).

A plan (:mod:`agentmem.long_term.ranking`) asks for raw scores and records; a store
answers it in :meth:`MemoryStore.fused_search`. The stores built on the engine
(:mod:`agentmem.stores.engine`) answer with payload-free searches, so only the final
records are read and parsed; any other store can reuse :func:`fused_search_program`, which
answers them with its public single-sided ``search`` (no boost) and ``get``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentmem._sansio import Program, call
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.store import (
    FusionPlan,
    MemoryStore,
    RecordRequest,
    ScoredRecord,
    ScoreRequest,
    SparseVector,
)

__all__ = ["fused_search_program", "run_plan"]


def _search_kwargs(
    request: ScoreRequest,
    flt: RecordFilter,
    dense: Sequence[float] | None,
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
        "exact": request.exact or request.ids is not None,
    }


def run_plan(
    plan: FusionPlan,
    scores: Callable[[list[ScoreRequest]], Program[list[dict[str, float]]]],
    records: Callable[[RecordRequest], Program[dict[str, Any]]],
) -> Program[list[ScoredRecord]]:
    """Drive ``plan``: ``scores`` answers its score requests (those asked together at
    once), ``records`` its record requests; returns the plan's hits."""
    request = next(plan)
    while True:
        answer: Any
        if isinstance(request, RecordRequest):
            answer = yield from records(request)
        else:
            batch = [request] if isinstance(request, ScoreRequest) else list(request)
            found = yield from scores(batch)
            answer = found[0] if isinstance(request, ScoreRequest) else found
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            result: list[ScoredRecord] = stop.value
            return result


def fused_search_program(
    store: MemoryStore,
    scope: Scope,
    flt: RecordFilter,
    dense: Sequence[float] | None,
    sparse: SparseVector | None,
    plan: FusionPlan,
) -> Program[list[ScoredRecord]]:
    """Answer ``plan`` through the public ``search``/``get`` of any :class:`MemoryStore`
    (the generic :meth:`MemoryStore.fused_search`); run it with ``drive``/``adrive``."""
    seen: dict[str, MemoryRecord] = {}

    def scores(batch: list[ScoreRequest]) -> Program[list[dict[str, float]]]:
        scored = []
        for one in batch:
            kwargs = _search_kwargs(one, flt, dense, sparse)
            hits = yield from call(store.search, store.asearch, scope, **kwargs)
            seen.update((h.record.id, h.record) for h in hits)
            scored.append({h.record.id: h.score for h in hits})
        return scored

    def records(request: RecordRequest) -> Program[dict[str, Any]]:
        missing = [i for i in request.ids if i not in seen]
        if missing:
            found = yield from call(store.get, store.aget, scope, missing)
            seen.update((r.id, r) for r in found)
        answer: dict[str, Any] = {i: seen[i] for i in request.ids if i in seen}
        if request.vectors:
            ids = list(answer)
            vectors = yield from call(store.get_vectors, store.aget_vectors, scope, ids)
            answer = {i: (answer[i], vectors[i]) for i in ids if i in vectors}
        return answer

    return (yield from run_plan(plan, scores, records))
