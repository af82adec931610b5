"""Hybrid-search plans compiled to payload-free Qdrant queries (private).

A fusion plan (:func:`agentmem.long_term._fusion.fusion_plan`) asks for raw scores and, at
the end, for records. On the Qdrant stores a score request is a query that returns ids and
scores only (the requests a plan asks together, one batch), and the record request one
``retrieve`` (with the dense vectors when the plan diversifies), so only the final records
are read and parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from agentmem._sansio import Program
from agentmem.long_term.records import RecordFilter, Scope
from agentmem.long_term.store import (
    FusionPlan,
    RecordRequest,
    ScoredRecord,
    ScoreRequest,
    SparseVector,
)
from agentmem.stores.qdrant import _common as qc

__all__ = ["qdrant_fused_program"]

Side = Literal["dense", "sparse"]


def qdrant_fused_program(
    query_batch: Callable[[list[qc.QuerySpec]], Program[list[list[qc.Hit]]]],
    retrieve: Callable[[list[str]], Program[list[qc.Hit]]],
    retrieve_dense: Callable[[list[str]], Program[list[tuple[qc.Hit, list[float]]]]],
    scope: Scope,
    flt: RecordFilter,
    dense: Sequence[float],
    sparse: SparseVector | None,
    dimension: int,
    plan: FusionPlan,
) -> Program[list[ScoredRecord]]:
    """Answer ``plan`` with a Qdrant store's engine: score requests are queries without
    payload (those asked together, one batch), the record request one retrieve (with the
    dense vectors when asked)."""
    conditions = qc.build_conditions(scope, flt)
    vectors: dict[Side, tuple[list[float] | None, SparseVector | None]] = {
        "dense": (qc.validate_dense(dense, dimension), None),
        "sparse": (None, None if sparse is None else qc.validate_sparse(sparse)),
    }

    def spec(request: ScoreRequest) -> qc.QuerySpec:
        conds = conditions
        if request.ids is not None:
            conds = (*conds, qc.HasIds(request.ids))
        if request.window is not None:
            start, end = request.window
            conds = (*conds, qc.Range("created_ts", start.timestamp(), end.timestamp()))
        dense_vec, sparse_vec = vectors[request.side]
        return qc.QuerySpec(
            conditions=conds,
            limit=request.limit,
            candidates=request.limit,
            dense=dense_vec,
            sparse=sparse_vec,
            exact=request.ids is not None,
            with_payload=False,
        )

    request = next(plan)
    while True:
        answer: Any
        if isinstance(request, RecordRequest):
            ids = list(request.ids)
            if request.vectors:
                pairs = yield from retrieve_dense(ids)
                answer = {
                    h.id: (qc.record_from_payload(h.id, h.payload), vector)
                    for h, vector in pairs
                    if qc.in_scope(h.payload, scope)
                }
            else:
                rows = yield from retrieve(ids)
                answer = {
                    h.id: qc.record_from_payload(h.id, h.payload)
                    for h in rows
                    if qc.in_scope(h.payload, scope)
                }
        else:
            batch = [request] if isinstance(request, ScoreRequest) else list(request)
            found = yield from query_batch([spec(one) for one in batch])
            scored = [{h.id: h.score for h in hits} for hits in found]
            answer = scored[0] if isinstance(request, ScoreRequest) else scored
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            result: list[ScoredRecord] = stop.value
            return result
