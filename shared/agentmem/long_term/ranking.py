"""Ranking settings, hybrid fusion, the relevance floor and result diversification.

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agentmem.errors import ConfigurationError
from agentmem.long_term.records import MemoryRecord
from agentmem.long_term.store import Boost, ScoredRecord

__all__ = [
    "Fusion",
    "RankingConfig",
    "SearchMode",
    "above_floor",
    "base_scores",
    "boost_parts",
    "dense_clear_winner",
    "diversify",
    "order_hits",
]

SearchMode = Literal["hybrid", "dense", "bm25"]
Fusion = Literal["score", "rrf"]


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
            (Qdrant's Reciprocal Rank Fusion inside the store, equal weights, no floor:
            agentmem 0.1's ranking).
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


def boost_parts(config: RankingConfig, record: MemoryRecord, now: datetime) -> tuple[float, float]:
    """``(importance_boost, recency_boost)`` of a record, as the store's formula computes
    them (age from the later of creation and last access)."""
    last = max(record.created_at, record.last_accessed_at or record.created_at)
    age_days = (now - last).total_seconds() / 86400.0
    return (
        config.importance_weight * record.importance,
        config.recency_weight * 0.5 ** (age_days / config.half_life_days),
    )


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
