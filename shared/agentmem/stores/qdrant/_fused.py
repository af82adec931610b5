"""Hybrid-search plans compiled to payload-free Qdrant queries (private).

A fusion plan (:func:`agentmem.long_term._fusion.fusion_plan`) asks for raw scores and, at
the end, for records. On the Qdrant stores a score request is a query that returns ids and
scores only, and the record request one ``retrieve``, so only the final records are read
and parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from agentmem.long_term.records import RecordFilter, Scope
from agentmem.long_term.store import FusionPlan, ScoredRecord, ScoreRequest, SparseVector
from agentmem.stores.qdrant import _common as qc
from agentmem.stores.qdrant._base import Op, Steps

__all__ = ["qdrant_fused_steps"]

Side = Literal["dense", "sparse"]


def qdrant_fused_steps(
    scope: Scope,
    flt: RecordFilter,
    dense: Sequence[float],
    sparse: SparseVector | None,
    dimension: int,
    plan: FusionPlan,
) -> Steps[list[ScoredRecord]]:
    """Drive ``plan`` on an agentmem Qdrant store: score requests are queries without
    payload, record requests one retrieve."""
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
            hits: list[qc.Hit] = yield Op("query", (spec,))
            answer = {h.id: h.score for h in hits}
        else:
            rows: list[qc.Hit] = yield Op("retrieve", (list(request.ids),))
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
