"""Hybrid-search plans compiled to payload-free Qdrant queries (private).

A fusion plan (:func:`agentmem.long_term._fusion.fusion_plan`) asks for raw scores and, at
the end, for records. On the Qdrant stores a score request is a query that returns ids and
scores only, and the record request one ``retrieve``, so only the final records are read
and parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from agentmem._sansio import Program
from agentmem.long_term.records import RecordFilter, Scope
from agentmem.long_term.store import FusionPlan, ScoredRecord, ScoreRequest, SparseVector
from agentmem.stores.qdrant import _common as qc

__all__ = ["qdrant_fused_program"]

Side = Literal["dense", "sparse"]


def qdrant_fused_program(
    query: Callable[[qc.QuerySpec], Program[list[qc.Hit]]],
    retrieve: Callable[[list[str]], Program[list[qc.Hit]]],
    scope: Scope,
    flt: RecordFilter,
    dense: Sequence[float],
    sparse: SparseVector | None,
    dimension: int,
    plan: FusionPlan,
) -> Program[list[ScoredRecord]]:
    """Answer ``plan`` with a Qdrant store's engine (``query``, ``retrieve``): score
    requests are queries without payload, the record request one retrieve."""
    conditions = qc.build_conditions(scope, flt)
    vectors: dict[Side, tuple[list[float] | None, SparseVector | None]] = {
        "dense": (qc.validate_dense(dense, dimension), None),
        "sparse": (None, None if sparse is None else qc.validate_sparse(sparse)),
    }
    request = next(plan)
    while True:
        answer: dict[str, Any]
        if isinstance(request, ScoreRequest):
            conds = conditions
            if request.ids is not None:
                conds = (*conds, qc.HasIds(request.ids))
            if request.window is not None:
                start, end = request.window
                conds = (*conds, qc.Range("created_ts", start.timestamp(), end.timestamp()))
            dense_vec, sparse_vec = vectors[request.side]
            spec = qc.QuerySpec(
                conditions=conds,
                limit=request.limit,
                candidates=request.limit,
                dense=dense_vec,
                sparse=sparse_vec,
                exact=request.ids is not None,
                with_payload=False,
            )
            hits = yield from query(spec)
            answer = {h.id: h.score for h in hits}
        else:
            rows = yield from retrieve(list(request.ids))
            answer = {
                h.id: qc.record_from_payload(h.id, h.payload)
                for h in rows
                if qc.in_scope(h.payload, scope)
            }
        try:
            request = plan.send(answer)
        except StopIteration as stop:
            result: list[ScoredRecord] = stop.value
            return result
