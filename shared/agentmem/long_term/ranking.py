"""Ranking settings and result diversification (near-duplicate removal and MMR)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np

from agentmem.errors import ConfigurationError
from agentmem.long_term.store import Boost, ScoredRecord

__all__ = ["RankingConfig", "SearchMode", "diversify", "order_hits"]

SearchMode = Literal["hybrid", "dense", "bm25"]


@dataclass(frozen=True)
class RankingConfig:
    """How long-term search ranks memories.

    The final score of a hit is ``fused + importance_weight * importance +
    recency_weight * 0.5 ** (age_days / half_life_days)``, where ``fused`` is the RRF score
    of the dense and BM25 candidate lists (hybrid), the cosine similarity (dense) or the
    BM25 score (bm25), and the age runs from the last access (else the creation).
    RRF scores are small (at most ``sum(1 / (k + 1))`` over the lists), so the default
    weights are small too: they break ties among similarly relevant memories rather than
    lift irrelevant ones.

    Attributes:
        mode: ``hybrid`` (dense + BM25, RRF), ``dense`` or ``bm25``.
        candidates: Candidates taken from each list before fusion.
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
    candidates: int = 60
    importance_weight: float = 0.002
    recency_weight: float = 0.002
    half_life_days: float = 30.0
    duplicate_threshold: float | None = 0.97
    mmr_lambda: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("hybrid", "dense", "bm25"):
            msg = f"mode must be 'hybrid', 'dense' or 'bm25', got {self.mode!r}"
            raise ConfigurationError(msg)
        if self.candidates < 1:
            msg = f"candidates must be at least 1, got {self.candidates!r}"
            raise ConfigurationError(msg)
        for name in ("importance_weight", "recency_weight"):
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
        if self.mmr_lambda is not None and not 0 <= self.mmr_lambda <= 1:
            msg = f"mmr_lambda must be in [0, 1], got {self.mmr_lambda!r}"
            raise ConfigurationError(msg)

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
