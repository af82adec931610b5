"""Second-stage search: hop through entity links, pseudo-relevance feedback, session lift.

After the first ranking (:mod:`agentmem.long_term.ranking`), :func:`expand` takes its best
hits as *seeds* and adds up to three components to the score of a hit, each shown under its
own name with ``explain=True`` (and each added to ``final``, so the parts still sum to the
score):

* ``expansion`` (``hops >= 1``): memories that share rare entities with a seed
  (:mod:`agentmem.long_term.links`, written with ``link=True``). An entity counts with its
  IDF ``log(1 + (N - df + 0.5) / (df + 0.5))`` over the memories in the search's filter, and
  entities in more than ``max_df`` of them are ignored. A candidate linked to seed ``s``
  gains ``hop_weight * top * rel(s) * shared(s, c)``, where ``top`` is the best first-stage
  score, ``rel(s)`` the seed's score over ``top``, and ``shared`` the IDF mass of the
  entities they share over the seed's. Each further hop starts from the best memories the
  previous one reached, scaled by ``hop_decay``.
* ``feedback`` (``feedback_weight > 0``): a second BM25 query made of the seeds' own
  indexed terms, weighted by each seed's ``rel(s)``; Qdrant's IDF keeps the rare ones
  decisive. A hit gains ``feedback_weight * top * score / best score`` of that list.
* ``session`` (``session_weight > 0``, :mod:`agentmem.long_term.session_keys`).

A memory the first stage did not return may enter through ``expansion`` or ``feedback``
(its first-stage parts are then 0). With nothing above the relevance floor there are no
seeds, so a question about nothing stored still returns nothing.

Example:
    >>> ExpansionConfig(hops=1).active, ExpansionConfig().active
    (True, False)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentmem._sansio import Program, call
from agentmem.errors import ConfigurationError
from agentmem.long_term.links import ENTITY_PREFIX, entities_of
from agentmem.long_term.records import MemoryRecord, RecordFilter, Scope
from agentmem.long_term.session_keys import session_lift
from agentmem.long_term.store import MemoryStore, ScoredRecord
from agentmem.sparse import SparseVector

__all__ = ["COMPONENTS", "MAX_HOPS", "EntityCounts", "ExpansionConfig", "expand", "feedback_vector"]

#: Most link hops a search may take.
MAX_HOPS = 3
#: Candidates read per hop (a payload-filtered scroll).
_HOP_READ = 128
#: The score components the second stage adds (each also added to ``final``).
COMPONENTS = ("expansion", "feedback", "session")


@dataclass(frozen=True)
class ExpansionConfig:
    """What a :class:`~agentmem.long_term.LongTermMemory` links at write time and adds at
    search time (see the module docstring). Everything is off by default.

    Attributes:
        link: Write entity links with every memory (needed by ``hops``).
        hops: Link hops at search time (0 = none, at most :data:`MAX_HOPS`).
        hop_weight: Weight of the ``expansion`` component.
        hop_decay: Factor applied to each hop after the first.
        max_df: Ignore entities in more than this fraction of the memories searched.
        feedback_weight: Weight of the ``feedback`` component (0 = no second query).
        session_weight: Weight of the ``session`` component (0 = none).
        seeds: How many first-stage hits seed the expansion and the feedback query.
        pool: The first stage returns at least this many hits to re-rank.

    Example:
        >>> ExpansionConfig(link=True, hops=1).hops
        1
    """

    link: bool = False
    hops: int = 0
    hop_weight: float = 0.3
    hop_decay: float = 0.5
    max_df: float = 0.05
    feedback_weight: float = 0.0
    session_weight: float = 0.0
    seeds: int = 3
    pool: int = 30

    def __post_init__(self) -> None:
        if isinstance(self.hops, bool) or not isinstance(self.hops, int):
            msg = f"hops must be an integer, got {self.hops!r}"
            raise ConfigurationError(msg)
        if not 0 <= self.hops <= MAX_HOPS:
            msg = f"hops must be in [0, {MAX_HOPS}], got {self.hops!r}"
            raise ConfigurationError(msg)
        for name in ("hop_weight", "feedback_weight", "session_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                msg = f"{name} must be a finite number >= 0, got {value!r}"
                raise ConfigurationError(msg)
        for name in ("hop_decay", "max_df"):
            value = getattr(self, name)
            if not math.isfinite(value) or not 0 < value <= 1:
                msg = f"{name} must be in (0, 1], got {value!r}"
                raise ConfigurationError(msg)
        for name in ("seeds", "pool"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be an integer >= 1, got {value!r}"
                raise ConfigurationError(msg)

    @property
    def active(self) -> bool:
        """Whether search adds any component."""
        return (
            (self.hops > 0 and self.hop_weight > 0)
            or self.feedback_weight > 0
            or self.session_weight > 0
        )

    def first_stage(self, top_k: int) -> int:
        """How many hits the first ranking returns for ``top_k`` results."""
        return max(top_k, self.pool) if self.active else top_k


class EntityCounts:
    """How many memories mention each entity, per search filter: a bounded cache that
    spares a hop its ``count`` calls for entities seen before.

    Counts only weigh entities (IDF), so one a little stale is harmless; the owner clears
    the cache on its own writes and deletes (:meth:`clear`).

    Example:
        >>> counts = EntityCounts(size=2)
        >>> counts.put("f", "oskar", 3); counts.get("f", "oskar")
        3
        >>> counts.clear(); counts.get("f", "oskar") is None
        True
    """

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        self._counts: dict[tuple[str, str], int] = {}

    def get(self, filter_key: str, entity: str) -> int | None:
        """The cached count of ``entity`` under the filter keyed ``filter_key``, if any."""
        return self._counts.get((filter_key, entity))

    def put(self, filter_key: str, entity: str, count: int) -> None:
        """Remember a count (the whole cache is dropped when it is full)."""
        if len(self._counts) >= self._size:
            self._counts.clear()
        self._counts[(filter_key, entity)] = count

    def clear(self) -> None:
        """Forget every count (after a write or a delete)."""
        self._counts.clear()


def feedback_vector(vectors: Sequence[SparseVector], weights: Sequence[float]) -> SparseVector:
    """The weighted sum of the seeds' document vectors: the feedback query.

    Example:
        >>> feedback_vector([SparseVector([1, 2], [1.0, 1.0]), SparseVector([2], [2.0])],
        ...                 [1.0, 0.5])
        SparseVector(indices=[1, 2], values=[1.0, 2.0])
    """
    total: dict[int, float] = {}
    for vector, weight in zip(vectors, weights, strict=True):
        for index, value in zip(vector.indices, vector.values, strict=True):
            total[index] = total.get(index, 0.0) + weight * value
    indices = sorted(total)
    return SparseVector(indices, [total[i] for i in indices])


def expand(
    store: MemoryStore,
    scope: Scope,
    flt: RecordFilter,
    hits: Sequence[ScoredRecord],
    config: ExpansionConfig,
    *,
    top_k: int,
    explain: bool,
    encode: Callable[[Sequence[MemoryRecord]], list[SparseVector]],
    counts: EntityCounts | None = None,
) -> Program[list[ScoredRecord]]:
    """The final ``top_k`` of the first-stage ``hits`` (best first) with the components
    of ``config`` added (see the module docstring).

    Args:
        store: The store searched (read with ``count``, ``scroll`` and ``search``).
        scope: The search's scope.
        flt: The search's filter (the expansion stays inside it).
        hits: The first stage's hits, best first.
        config: Which components, and their weights.
        top_k: How many results.
        explain: Add each component to the hits' ``components``.
        encode: The BM25 document vectors of records, as the store indexes them (for
            the feedback query).
        counts: A cache of entity counts kept across searches (default: none).
    """
    if not hits or not config.active or hits[0].score <= 0:
        return list(hits[:top_k])
    top = hits[0].score
    seeds = hits[: config.seeds]
    rel = {h.record.id: h.score / top for h in seeds}
    records = {h.record.id: h.record for h in hits}
    extra: dict[str, dict[str, float]] = {}

    def add(memory_id: str, name: str, value: float) -> None:
        if value > 0:
            parts = extra.setdefault(memory_id, {})
            parts[name] = parts.get(name, 0.0) + value

    if config.hops and config.hop_weight:
        counts = counts if counts is not None else EntityCounts()
        reached = yield from _hops(store, scope, flt, seeds, rel, config, records, counts)
        for memory_id, strength in reached.items():
            add(memory_id, "expansion", config.hop_weight * top * strength)
    if config.feedback_weight:
        query = feedback_vector(
            encode([h.record for h in seeds]), [rel[h.record.id] for h in seeds]
        )
        if query.indices:
            found = yield from call(
                store.search,
                store.asearch,
                scope,
                sparse=query,
                filter=flt,
                limit=config.first_stage(top_k),
                candidates=config.first_stage(top_k),
            )
            best = max((h.score for h in found), default=0.0)
            for hit in found if best > 0 else ():
                records.setdefault(hit.record.id, hit.record)
                add(hit.record.id, "feedback", config.feedback_weight * top * hit.score / best)
    if config.session_weight:
        for memory_id, lift in session_lift(hits).items():
            add(memory_id, "session", config.session_weight * top * lift)
    return _merge(hits, records, extra, top_k, explain)


def _hops(
    store: MemoryStore,
    scope: Scope,
    flt: RecordFilter,
    seeds: Sequence[ScoredRecord],
    rel: dict[str, float],
    config: ExpansionConfig,
    records: dict[str, MemoryRecord],
    counts: EntityCounts,
) -> Program[dict[str, float]]:
    """``{memory id: link strength}`` of the memories reached from ``seeds``."""
    key = flt.model_dump_json()
    total = counts.get(key, "")
    if total is None:
        total = yield from call(store.count, store.acount, scope, filter=flt)
        counts.put(key, "", total)
    limit = max(2.0, config.max_df * total)
    df: dict[str, int] = {}
    frontier = [(h.record, rel[h.record.id]) for h in seeds]
    visited = {h.record.id for h in seeds}
    reached: dict[str, float] = {}
    for hop in range(config.hops):
        wanted = {e for record, _ in frontier for e in entities_of(record)} - set(df)
        for entity in sorted(wanted):
            known = counts.get(key, entity)
            if known is None:
                linked = flt.model_copy(update={"related_to": (ENTITY_PREFIX + entity,)})
                known = yield from call(store.count, store.acount, scope, filter=linked)
                counts.put(key, entity, known)
            df[entity] = known
        idf = {
            e: math.log(1 + (total - n + 0.5) / (n + 0.5)) for e, n in df.items() if 1 < n <= limit
        }
        rare = sorted({e for record, _ in frontier for e in entities_of(record) if e in idf})
        if not rare:
            break
        linked = flt.model_copy(update={"related_to": tuple(ENTITY_PREFIX + e for e in rare)})
        page, _ = yield from call(
            store.scroll, store.ascroll, scope, filter=linked, limit=_HOP_READ
        )
        decay = 1.0 if hop == 0 else config.hop_decay
        gained: dict[str, float] = {}
        for source, weight in frontier:
            mine = {e for e in entities_of(source) if e in idf}
            mass = sum(idf[e] for e in mine)
            if not mass:
                continue
            for candidate in page:
                if candidate.id == source.id:
                    continue
                shared = sum(idf[e] for e in mine.intersection(entities_of(candidate)))
                if shared:
                    gained[candidate.id] = gained.get(candidate.id, 0.0) + (
                        decay * weight * shared / mass
                    )
                    records.setdefault(candidate.id, candidate)
        for memory_id, strength in gained.items():
            reached[memory_id] = reached.get(memory_id, 0.0) + strength
        fresh = sorted((i for i in gained if i not in visited), key=lambda i: (-gained[i], i))[
            : config.seeds
        ]
        visited.update(fresh)
        frontier = [(records[i], gained[i]) for i in fresh]
    return reached


def _merge(
    hits: Sequence[ScoredRecord],
    records: dict[str, MemoryRecord],
    extra: dict[str, dict[str, float]],
    top_k: int,
    explain: bool,
) -> list[ScoredRecord]:
    first = {h.record.id: h for h in hits}
    out: list[ScoredRecord] = []
    for memory_id in dict.fromkeys([*first, *extra]):
        parts = extra.get(memory_id, {})
        hit = first.get(memory_id)
        score = (hit.score if hit is not None else 0.0) + sum(parts.values())
        components: dict[str, float] = {}
        if explain:
            components = dict(hit.components) if hit is not None else {"base": 0.0}
            components.update({name: parts.get(name, 0.0) for name in COMPONENTS})
            components["final"] = score
        out.append(ScoredRecord(records[memory_id], score, components))
    out.sort(key=lambda h: (-h.score, h.record.id))
    return out[:top_k]
