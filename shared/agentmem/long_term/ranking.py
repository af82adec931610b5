"""The one ranker: every score a long-term search returns is computed here, for every
backend and every mode. Stores only find candidates and their raw scores (cosine, BM25);
this module fuses them, adds the boosts, applies the floor, explains the score and
diversifies the result.

A search is a *plan* (a generator, see :data:`~agentmem.long_term.store.FusionPlan`): it
asks the store for raw scores (:class:`~agentmem.long_term.store.ScoreRequest`) and records
(:class:`~agentmem.long_term.store.RecordRequest`), and returns the ranked hits. A store
answers plans in :meth:`MemoryStore.fused_search` (the engine of
:mod:`agentmem.stores.engine` with its payload-free searches; any other store through
:func:`agentmem.long_term._fusion.fused_search_program`). :func:`ranking_plan` is
``LongTermMemory``'s search, :func:`list_plan` also the store's own ``search``.

Every final score is the sum of the :data:`SCORE_PARTS` a hit's ``explain`` components
hold: ``base`` (the fused or raw score), ``temporal_boost``, ``importance_boost`` and
``recency_boost``. ``final`` is that sum, equal to the score (rounded to float32 in the
rankings by the lists' own scores, as their scores always were: see :func:`list_plan`).


Hybrid search (the default) takes the dense and the BM25 candidate lists with their raw
scores and fuses them by score (:func:`fuse`):

``base = bm25 / max(bm25) + dense_weight * cosine / max(cosine)``

then adds ``temporal_weight`` when the memory was formed in a period the query names
(:mod:`agentmem.long_term.temporal`) and the importance and recency boosts. Each side is
normalized by its best score among the candidates, so the side with a clear winner decides
and neither scale (BM25's depends on the collection) matters. On LoCoMo dev this fusion
beats equal-weight RRF, which lets the weaker dense list drag BM25 down.

**Relevance floor** (hybrid only): a candidate is returned only when its ``base`` is at
least ``relative_floor`` times the best candidate's and it is either lexically matched
(some BM25 score) or has a raw cosine of at least ``min_similarity``. So a question about one memory
returns that memory without padding the list, and a question about nothing stored returns
nothing. The floor never drops the candidate the dense side ranks first by a clear margin
(:func:`dense_clear_winner`: ahead of the second by two standard deviations of the other
candidates' cosines), whatever its raw cosine.
``RankingConfig(relative_floor=None, min_similarity=None)`` turns the floor off.
``min_similarity`` is a raw cosine, so it depends on the embedding model: 0.3 suits the
default all-MiniLM-L6-v2 (unrelated sentences score about -0.1 to 0.2 against a question,
related ones 0.4 and up); raise it for models whose cosines run high.

The defaults (``dense_weight``, ``temporal_weight``, the floor) were chosen on LoCoMo's
development conversations by leave-one-conversation-out validation (``bench/locomo.py``).
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from agentmem._util.clock import utcnow
from agentmem.errors import ConfigurationError, InvalidValueError
from agentmem.long_term.records import MemoryRecord
from agentmem.long_term.store import (
    Boost,
    FusionPlan,
    RecordRequest,
    ScoredRecord,
    ScoreRequest,
)
from agentmem.long_term.temporal import Window, query_windows

__all__ = [
    "RRF_K",
    "SCORE_PARTS",
    "Fusion",
    "RankingConfig",
    "SearchMode",
    "above_floor",
    "base_scores",
    "boost_parts",
    "boosts",
    "check_boost",
    "dense_clear_winner",
    "diversify",
    "fusion_plan",
    "list_plan",
    "order_hits",
    "ranking_plan",
    "rrf_scores",
]

SearchMode = Literal["hybrid", "dense", "bm25"]
Fusion = Literal["score", "rrf"]
Side = Literal["dense", "sparse"]

#: Qdrant's default RRF constant: a hit at 1-based rank ``r`` adds ``1 / (r + RRF_K - 1)``.
RRF_K = 2

#: The ``explain`` components whose sum is the final score (those a hit has).
SCORE_PARTS = ("base", "temporal_boost", "importance_boost", "recency_boost")


@dataclass(frozen=True)
class RankingConfig:
    """How long-term search ranks memories.

    The final score of a hit is ``base + importance_weight * importance +
    recency_weight * 0.5 ** (age_days / half_life_days)``, where ``base`` is the fused
    score of the dense and BM25 candidate lists (hybrid, see the module docstring), the
    cosine similarity (dense) or the BM25 score (bm25), and the age runs from the last
    access (else the creation). The default weights are small: they break ties among
    similarly relevant memories rather than lift irrelevant ones.

    Attributes:
        mode: ``hybrid`` (dense + BM25), ``dense`` or ``bm25``.
        fusion: How hybrid fuses the lists: ``score`` (default: normalized BM25 plus
            weighted cosine, with the temporal boost and the relevance floor) or ``rrf``
            (Reciprocal Rank Fusion of the two lists with Qdrant's constant, equal
            weights, no floor: agentmem 0.1's ranking).
        candidates: Candidates taken from each list before fusion.
        dense_weight: Weight of the cosine similarity against the normalized BM25 score.
        temporal_weight: Added to a memory formed in a period the query names.
        relative_floor: Drop hybrid hits whose base score is under this fraction of the
            best one; ``None`` keeps them.
        min_similarity: Drop hybrid hits with no lexical match whose cosine is under
            this; ``None`` keeps them.
        importance_weight: Weight of importance in [0, 1].
        recency_weight: Weight of the recency decay.
        half_life_days: Age at which the recency term halves.
        duplicate_threshold: Drop a hit whose cosine similarity to a better hit is at least
            this (near-duplicates); ``None`` keeps them.
        mmr_lambda: Maximal Marginal Relevance trade-off (1 = relevance only); ``None``
            disables MMR re-ranking.

    Example:
        >>> RankingConfig(mode="bm25").mode
        'bm25'
    """

    mode: SearchMode = "hybrid"
    fusion: Fusion = "score"
    candidates: int = 60
    dense_weight: float = 0.7
    temporal_weight: float = 0.15
    relative_floor: float | None = 0.3
    min_similarity: float | None = 0.3
    importance_weight: float = 0.002
    recency_weight: float = 0.002
    half_life_days: float = 30.0
    duplicate_threshold: float | None = 0.97
    mmr_lambda: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("hybrid", "dense", "bm25"):
            msg = f"mode must be 'hybrid', 'dense' or 'bm25', got {self.mode!r}"
            raise ConfigurationError(msg)
        if self.fusion not in ("score", "rrf"):
            msg = f"fusion must be 'score' or 'rrf', got {self.fusion!r}"
            raise ConfigurationError(msg)
        if self.candidates < 1:
            msg = f"candidates must be at least 1, got {self.candidates!r}"
            raise ConfigurationError(msg)
        for name in ("importance_weight", "recency_weight", "dense_weight", "temporal_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                msg = f"{name} must be a finite number >= 0, got {value!r}"
                raise ConfigurationError(msg)
        if not math.isfinite(self.half_life_days) or self.half_life_days <= 0:
            msg = f"half_life_days must be > 0, got {self.half_life_days!r}"
            raise ConfigurationError(msg)
        if self.duplicate_threshold is not None and not 0 < self.duplicate_threshold <= 1:
            msg = f"duplicate_threshold must be in (0, 1], got {self.duplicate_threshold!r}"
            raise ConfigurationError(msg)
        for name in ("relative_floor", "min_similarity"):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or not 0 <= value <= 1):
                msg = f"{name} must be in [0, 1] or None, got {value!r}"
                raise ConfigurationError(msg)
        if self.mmr_lambda is not None and not 0 <= self.mmr_lambda <= 1:
            msg = f"mmr_lambda must be in [0, 1], got {self.mmr_lambda!r}"
            raise ConfigurationError(msg)

    @property
    def fuses_by_score(self) -> bool:
        """Whether hybrid search fuses client-side by score (else Qdrant's RRF)."""
        return self.fusion == "score"

    @property
    def diversifies(self) -> bool:
        """Whether results go through near-duplicate removal or MMR (which need vectors)."""
        return self.duplicate_threshold is not None or self.mmr_lambda is not None

    def boost(self, now: datetime) -> Boost:
        """The store-side boosts of this config at ``now``."""
        return Boost(
            importance_weight=self.importance_weight,
            recency_weight=self.recency_weight,
            half_life_days=self.half_life_days,
            now=now,
        )

    def fetch_size(self, top_k: int) -> int:
        """How many hits to fetch for ``top_k`` results: a few spare ones refill the list
        when near-duplicates are dropped."""
        return min(1000, top_k + max(5, top_k // 2)) if self.diversifies else top_k

    def finish(
        self,
        hits: list[ScoredRecord],
        vectors: Sequence[Sequence[float]],
        top_k: int,
        *,
        explain: bool,
    ) -> list[ScoredRecord]:
        """The final ``top_k`` of ``hits`` (ordered, with their ``vectors`` when the config
        diversifies); with ``explain``, each hit's ``redundancy`` is added to its parts."""
        if not self.diversifies:
            return hits[:top_k]
        chosen = diversify(
            hits,
            vectors,
            top_k,
            duplicate_threshold=self.duplicate_threshold,
            mmr_lambda=self.mmr_lambda,
        )
        if not explain:
            return [hit for hit, _ in chosen]
        return [
            hit._replace(components={**hit.components, "redundancy": red}) for hit, red in chosen
        ]


def base_scores(
    dense: Mapping[str, float],
    sparse: Mapping[str, float],
    dense_weight: float,
    *,
    tops: tuple[float, float] | None = None,
) -> dict[str, float]:
    """Fused base score of every candidate (see the module docstring); a candidate missing
    from one side scores 0 there. ``tops`` overrides the best dense and BM25 scores that
    normalize each side (default: the best of ``dense`` and of ``sparse``).

    Example:
        >>> base_scores({"a": 0.8, "b": 0.4}, {"b": 6.0}, dense_weight=1.0)
        {'a': 1.0, 'b': 1.5}
    """
    if tops is None:
        tops = (max(dense.values(), default=0.0), max(sparse.values(), default=0.0))
    top_dense, top_sparse = tops
    out: dict[str, float] = {}
    for key in dict.fromkeys([*dense, *sparse]):
        lexical = sparse.get(key, 0.0) / top_sparse if top_sparse > 0 else 0.0
        similar = dense.get(key, 0.0) / top_dense if top_dense > 0 else 0.0
        out[key] = lexical + dense_weight * similar
    return out


def above_floor(
    config: RankingConfig, base: float, best: float, cosine: float, lexical: float
) -> bool:
    """Whether a hybrid candidate passes the relevance floor (see the module docstring)."""
    if config.relative_floor is not None and base < config.relative_floor * best:
        return False
    return config.min_similarity is None or lexical > 0 or cosine >= config.min_similarity


#: How far, in standard deviations of the other dense candidates' cosines, the dense side's
#: first candidate must lead its second to be a clear winner (:func:`dense_clear_winner`).
CLEAR_MARGIN_SDS = 2.0
#: Fewest other dense candidates whose spread makes a margin meaningful.
MIN_MARGIN_SAMPLE = 10


def dense_clear_winner(dense: Mapping[str, float]) -> str | None:
    """The candidate the dense side ranks first by a clear margin, or ``None``: the relevance
    floor keeps it whatever its raw cosine (a paraphrase shares no word with its memory, and
    a conversation turn's cosine runs lower than a bare fact's).

    "Clear" is measured against the query's own candidates, not a fixed cosine: the first
    cosine must exceed the second by at least :data:`CLEAR_MARGIN_SDS` standard deviations
    of the cosines of the candidates after it, with at least :data:`MIN_MARGIN_SAMPLE` of
    them (fewer say nothing about the spread). With all-MiniLM-L6-v2 an unrelated question
    has no such winner: its best memories come in a crowd.

    Example:
        >>> crowd = {f"m{i}": 0.1 + 0.01 * (i % 5) for i in range(12)}
        >>> dense_clear_winner({**crowd, "fact": 0.28})
        'fact'
        >>> dense_clear_winner({**crowd, "near": 0.15}) is None
        True
    """
    if len(dense) < MIN_MARGIN_SAMPLE + 1:
        return None
    ranked = sorted(dense.items(), key=lambda item: (-item[1], item[0]))
    rest = [score for _, score in ranked[1:]]
    mean = sum(rest) / len(rest)
    spread = math.sqrt(sum((score - mean) ** 2 for score in rest) / len(rest))
    first, second = ranked[0][1], ranked[1][1]
    if spread > 0 and first - second >= CLEAR_MARGIN_SDS * spread:
        return ranked[0][0]
    return None


def rrf_scores(lists: Sequence[Sequence[str]]) -> dict[str, float]:
    """Reciprocal Rank Fusion of ranked id lists (best first), with Qdrant's constant: a
    hit at 1-based rank ``r`` in a list adds ``1 / (r + 1)``.

    Example:
        >>> rrf_scores([["a", "b"], ["b"]])
        {'a': 0.5, 'b': 0.8333333333333333}
    """
    fused: dict[str, float] = {}
    for ranked in lists:
        for rank, key in enumerate(ranked, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (rank + RRF_K - 1)
    return fused


def check_boost(boost: Boost | None) -> Boost | None:
    """A checked :class:`Boost` with its reference time resolved (default: now); ``None``
    when it would not change any score.

    Raises:
        InvalidValueError: A weight that is negative or not finite, a half-life that is
            not positive, or a naive ``now``.

    Example:
        >>> check_boost(Boost()) is None
        True
    """
    if boost is None:
        return None
    for name in ("importance_weight", "recency_weight", "half_life_days"):
        value = getattr(boost, name)
        if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            msg = f"Boost.{name} must be a finite number >= 0, got {value!r}"
            raise InvalidValueError(msg)
    if boost.half_life_days <= 0:
        msg = f"Boost.half_life_days must be > 0, got {boost.half_life_days!r}"
        raise InvalidValueError(msg)
    if boost.importance_weight == 0 and boost.recency_weight == 0:
        return None
    now = boost.now or utcnow()
    if now.tzinfo is None:
        msg = "Boost.now must be timezone-aware (for example datetime.now(timezone.utc))"
        raise InvalidValueError(msg)
    return dataclasses.replace(boost, now=now)


def boosts(boost: Boost, record: MemoryRecord) -> tuple[float, float]:
    """``(importance_boost, recency_boost)`` of a record: ``importance_weight *
    importance`` and ``recency_weight * 0.5 ** (age_days / half_life_days)``, the age
    running from the later of creation and last access to ``boost.now`` (default: now).

    A memory dated after ``now`` counts as brand new (age 0), so the recency boost is never
    more than ``recency_weight`` (a date decades ahead would otherwise overflow).

    Example:
        >>> from datetime import datetime, timedelta, timezone
        >>> from agentmem.long_term.records import Scope
        >>> now = datetime(2024, 1, 31, tzinfo=timezone.utc)
        >>> r = MemoryRecord.new("x", "semantic", scope=Scope(user_id="u"),
        ...                      importance=0.5, created_at=now - timedelta(days=30))
        >>> boosts(Boost(importance_weight=0.1, recency_weight=1.0, now=now), r)
        (0.05, 0.5)
    """
    now = boost.now or utcnow()
    last = max(record.created_at, record.last_accessed_at or record.created_at)
    age_days = max(0.0, (now - last).total_seconds() / 86400.0)
    return (
        boost.importance_weight * record.importance,
        boost.recency_weight * 0.5 ** (age_days / boost.half_life_days),
    )


def boost_parts(config: RankingConfig, record: MemoryRecord, now: datetime) -> tuple[float, float]:
    """``(importance_boost, recency_boost)`` of a record under ``config`` at ``now``
    (:func:`boosts`)."""
    return boosts(config.boost(now), record)


def order_hits(hits: Sequence[ScoredRecord]) -> list[ScoredRecord]:
    """Best first; equal scores come back in an engine-dependent order, so ties go by id."""
    return sorted(hits, key=lambda h: (-h.score, h.record.id))


def diversify(
    hits: Sequence[ScoredRecord],
    vectors: Sequence[Sequence[float]],
    k: int,
    *,
    duplicate_threshold: float | None,
    mmr_lambda: float | None,
) -> list[tuple[ScoredRecord, float]]:
    """Pick ``k`` hits: drop near-duplicates, then (optionally) re-rank by MMR.

    A hit is a duplicate when its content hash equals that of a hit picked before it, or
    its cosine similarity to one is at least ``duplicate_threshold``. MMR picks, at each
    step, the hit maximizing ``mmr_lambda * relevance - (1 - mmr_lambda) * redundancy``
    (relevance: the score min-max normalized over the candidates; redundancy: the highest
    cosine similarity to a hit already picked). Without MMR the order is the score order.

    Returns:
        ``(hit, redundancy)`` pairs in pick order.
    """
    if not hits or k <= 0:
        return []
    import numpy as np  # here: opening a store or counting its memories never needs it

    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    sims = unit @ unit.T
    scores = np.asarray([h.score for h in hits], dtype=np.float64)
    spread = float(scores.max() - scores.min())
    relevance = (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)
    hashes = [h.record.content_hash for h in hits]

    picked: list[int] = []
    redundancy = np.zeros(len(hits))
    remaining = list(range(len(hits)))
    out: list[tuple[ScoredRecord, float]] = []
    while remaining and len(picked) < k:
        picked_hashes = {hashes[j] for j in picked}
        remaining = [
            i
            for i in remaining
            if hashes[i] not in picked_hashes
            and (duplicate_threshold is None or redundancy[i] < duplicate_threshold)
        ]
        if not remaining:
            break
        if mmr_lambda is None:
            best = remaining[0]
        else:
            values = mmr_lambda * relevance[remaining] - (1 - mmr_lambda) * redundancy[remaining]
            best = remaining[int(np.argmax(values))]
        picked.append(best)
        out.append((hits[best], float(redundancy[best])))
        remaining.remove(best)
        redundancy = np.maximum(redundancy, sims[best])
    return out


# -- plans: the searches, written once for every store -------------------------------


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
    """Hybrid search by score fusion: the fused hits above the floor, best first, at most
    ``fetch`` of them; with ``top_k``, the final ``top_k`` of those
    (:meth:`RankingConfig.finish`: diversified with the vectors read along with the records
    when the config diversifies). It asks for:

    1. the dense and the BM25 candidate lists (ids and raw scores only);
    2. which candidates fall in a period the query names (temporal boost);
    3. the exact score on the other side of a candidate missing from a list cut at
       ``candidates``, when it could reach the best ``fetch`` with it (so no score that
       matters is guessed);
    4. the records of the best ``fetch`` candidates by base score, for the importance and
       recency boosts, the floor and the result.
    """
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
    for i, record, vector in _rows(rows, chosen, with_vectors):
        if vector is not None:
            vectors.append(vector)
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


def _rows(
    rows: Mapping[str, Any], ids: Sequence[str], vectors: bool
) -> Iterator[tuple[str, MemoryRecord, list[float] | None]]:
    """``(id, record, vector or None)`` of each of ``ids`` in the answer ``rows`` to a
    :class:`RecordRequest` (one deleted between the two reads is skipped)."""
    for i in ids:
        row = rows.get(i)
        if row is not None:
            yield (i, row[0], row[1]) if vectors else (i, row, None)


def list_plan(
    sides: Sequence[Side],
    *,
    limit: int,
    candidates: int,
    boost: Boost | None,
    explain: bool,
    exact: bool = False,
    finish: Callable[[list[ScoredRecord], list[list[float]]], list[ScoredRecord]] | None = None,
) -> FusionPlan:
    """Rank by the lists' own scores: one side's raw score (cosine or BM25), or with both
    sides the RRF of their ranks (:func:`rrf_scores`: agentmem 0.1's hybrid ranking, no
    floor), plus the boosts (:func:`boosts`). Returns the best ``limit`` hits, or with
    ``finish`` what it makes of them and their dense vectors (read with the records).

    The lists hold ``candidates`` each (only ``limit`` for one side without boosts); the
    best ``candidates`` by base score are boosted. A boost adds at most
    ``importance_weight + recency_weight``, so only the records of candidates within that
    of the ``limit``-th base score are read.

    The score is rounded to a float32, the precision of the engines' raw scores (and of the
    scores these rankings had when Qdrant computed them): boosts differing below it (two
    memories formed seconds apart) tie, and ties go by id (:func:`order_hits`). So its
    ``explain`` parts add up to it within float32 precision.
    """
    boost = check_boost(boost)
    hybrid = len(sides) == 2
    size = candidates if hybrid or boost is not None else limit
    answers = yield tuple(ScoreRequest(side, size, exact=exact) for side in sides)
    lists: dict[Side, dict[str, float]] = dict(zip(sides, answers, strict=True))
    base = rrf_scores([list(found) for found in lists.values()]) if hybrid else lists[sides[0]]
    pool = sorted(base, key=lambda i: (-base[i], i))[:size]
    if boost is None or len(pool) <= limit:
        chosen = pool[:limit]
    else:
        bar = base[pool[limit - 1]] - boost.importance_weight - boost.recency_weight
        chosen = [i for i in pool if base[i] >= bar]
    if not chosen:
        return []
    raw = {side: dict(found) for side, found in lists.items()}
    ranks = {side: {i: n for n, i in enumerate(found, start=1)} for side, found in lists.items()}
    if explain and hybrid:  # the raw score of a hit on the side whose list missed it
        fills = [(side, tuple(i for i in chosen if i not in lists[side])) for side in sides]
        fills = [(side, missing) for side, missing in fills if missing]
        if fills:
            found = yield tuple(ScoreRequest(side, len(ids), ids) for side, ids in fills)
            for (side, _), more in zip(fills, found, strict=True):
                raw[side].update(more)
    vectors = finish is not None
    rows: dict[str, Any] = yield RecordRequest(tuple(chosen), vectors)
    hits: list[ScoredRecord] = []
    read: dict[str, list[float]] = {}
    for i, record, vector in _rows(rows, chosen, vectors):
        if vector is not None:
            read[i] = vector
        importance, recency = boosts(boost, record) if boost is not None else (0.0, 0.0)
        score = _float32(base[i] + importance + recency)
        parts: dict[str, float] = {}
        if explain:
            for side in sides:
                if i in raw[side]:
                    parts[side] = raw[side][i]
                if i in ranks[side]:
                    parts[f"{side}_rank"] = float(ranks[side][i])
            if hybrid:
                parts["fused"] = base[i]
            parts["base"] = base[i]
            if boost is not None:
                parts["importance_boost"], parts["recency_boost"] = importance, recency
            parts["final"] = score
        hits.append(ScoredRecord(record, score, parts))
    hits = order_hits(hits)[:limit]
    return hits if finish is None else finish(hits, [read[h.record.id] for h in hits])


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32.

    Example:
        >>> _float32(0.1)
        0.10000000149011612
    """
    return float(struct.unpack("f", struct.pack("f", value))[0])


def ranking_plan(
    config: RankingConfig,
    *,
    query: str,
    mode: SearchMode,
    has_sparse: bool,
    top_k: int,
    now: datetime,
    explain: bool,
) -> FusionPlan:
    """``LongTermMemory``'s search for ``query`` in ``mode`` at ``now``: hybrid by score
    fusion (:func:`fusion_plan`, with the periods the query names), else by the lists'
    scores or their RRF (:func:`list_plan`); the final ``top_k``, diversified as ``config``
    says. Each list holds ``config.candidates``, or more when ``top_k`` needs them."""
    fetch = config.fetch_size(top_k)
    candidates = max(config.candidates, fetch)
    if mode == "hybrid" and config.fuses_by_score:
        return (
            yield from fusion_plan(
                config,
                has_sparse=has_sparse,
                candidates=candidates,
                fetch=fetch,
                now=now,
                windows=query_windows(query, now) if config.temporal_weight else [],
                explain=explain,
                top_k=top_k,
            )
        )
    sides_of: dict[SearchMode, tuple[Side, ...]] = {
        "dense": ("dense",),
        "bm25": ("sparse",),
        "hybrid": ("dense", "sparse"),
    }
    sides = sides_of[mode]

    def finish(hits: list[ScoredRecord], vectors: list[list[float]]) -> list[ScoredRecord]:
        return config.finish(hits, vectors, top_k, explain=explain)

    return (
        yield from list_plan(
            sides,
            limit=fetch,
            candidates=candidates,
            boost=config.boost(now),
            explain=explain,
            finish=finish if config.diversifies else None,
        )
    )
