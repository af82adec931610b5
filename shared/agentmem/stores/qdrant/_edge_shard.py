"""The schema of an agentmem Qdrant Edge shard: vectors, optimizer settings, payload indexes.

Shared by the live store (:mod:`agentmem.stores.qdrant.edge`) and the index builder's
child process (:mod:`agentmem.stores.qdrant._edge_index`), which creates the rebuilt
generation with the same schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qdrant_edge as qe

from agentmem.long_term.store import DENSE_VECTOR, SPARSE_VECTOR
from agentmem.stores import points as pt
from agentmem.stores.qdrant._edge_census import CENSUS_FIELD

__all__ = ["HOT_FIELDS", "create_indexes", "create_shard", "lazy_layout", "shard_schema"]


def create_shard(path: Path, dimension: int, *, index_everything: bool = False) -> qe.EdgeShard:
    """A new, empty shard at ``path`` with agentmem's schema and payload indexes.

    ``index_everything`` (a rebuilt generation) makes ``optimize()`` index every segment,
    however small, and keep the segments it has indexed rather than merge them (the
    builder may index a store in parts: ``AutoIndex.parts``);
    otherwise Edge leaves segments under about 10 MB of vectors unindexed.
    """
    shard = qe.EdgeShard.create(
        str(path), shard_schema(dimension, index_everything=index_everything)
    )
    create_indexes(shard)
    return shard


def shard_schema(dimension: int, *, index_everything: bool = False) -> qe.EdgeConfig:
    """The config of a new shard (or rebuilt generation).

    Indexed segments keep an int8 copy of the dense vectors (scalar quantization, +25% of
    the float32 size): the HNSW graph is built and searched on it, about 4x faster to build
    here, and searches rescore their candidates with the float32 vectors (see
    ``QdrantEdgeStore``'s queries), so the scores are exact cosines. On MiniLM vectors of
    LoCoMo turns (29,000 points) recall@10 against exact search was 0.992 with it and
    0.994 without.

    Every large part (float32 vectors, their int8 copy, the HNSW graph, payloads) is
    memory-mapped without Edge's own warm-up (Qdrant's ``cold`` memory tier): the store
    reads the files into the page cache itself, sequentially, when it opens to search
    (``QdrantEdgeStore(preload=True)``), which is what the ``cached`` tier does one 4 KiB
    page at a time; a command that only counts skips that read (:func:`lazy_layout`).
    """
    optimizers = (
        qe.EdgeOptimizersConfig(indexing_threshold=1, default_segment_number=_KEEP_SEGMENTS)
        if index_everything
        else None
    )
    cold = qe.Memory.Cold
    dense = qe.EdgeVectorParams(
        size=dimension,
        distance=qe.Distance.Cosine,
        memory=cold,
        quantization_config=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, memory=cold),
    )
    return qe.EdgeConfig(
        vectors={DENSE_VECTOR: dense},
        sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        hnsw_config=qe.HnswIndexConfig(
            m=_HNSW_M, ef_construct=_HNSW_EF, full_scan_threshold=_FULL_SCAN_KB, memory=cold
        ),
        payload_memory=cold,
        optimizers=optimizers,
    )


#: Qdrant's defaults, spelled out because the memory tier cannot be set without them.
_HNSW_M, _HNSW_EF, _FULL_SCAN_KB = 16, 100, 10_000
#: Segments Edge's optimizer keeps before it merges (and so re-indexes) any: more than a
#: rebuild makes (see ``_edge_index.part_size``), also when it resumed one stopped before.
_KEEP_SEGMENTS = 32


def lazy_layout(config: dict[str, Any]) -> bool:
    """Whether a shard with this ``edge_config.json`` loads none of its large parts at
    open (see :func:`shard_schema`); shards made by an earlier agentmem load them all (their
    next index rebuild gives them the new layout).

    Example:
        >>> import json, tempfile
        >>> path = Path(tempfile.mkdtemp())
        >>> create_shard(path, 8).close()
        >>> lazy_layout(json.loads((path / "edge_config.json").read_text()))
        True
    """
    dense = config.get("vectors", {}).get(DENSE_VECTOR, {})
    quantized = dense.get("quantization_config", {}).get("scalar", {})
    parts = (dense, quantized, config.get("hnsw_config", {}))
    return all(part.get("memory") == "cold" for part in parts)


#: Payload indexes kept in RAM: those nearly every search and count filters on. The others
#: are memory-mapped and read through the page cache when a filter needs them (Qdrant's
#: ``on_disk`` payload index): an indexed segment loads them lazily, so opening a store of
#: 110,000 points took 0.15-0.25 s instead of 0.5-0.8 s here, with the same search times.
HOT_FIELDS = frozenset({pt.TENANT_FIELD, pt.CURRENT_SCOPE_FIELD, pt.SPACE_FIELD})


def create_indexes(shard: qe.EdgeShard) -> None:
    """Create the payload indexes the shard lacks (see :data:`HOT_FIELDS`)."""
    existing = set(shard.info().payload_schema)
    schemas: list[tuple[str, Any]] = [(pt.TENANT_FIELD, qe.KeywordIndexParams(is_tenant=True))]
    schemas += [(k, qe.KeywordIndexParams(memory=_placement(k))) for k in pt.KEYWORD_FIELDS]
    schemas += [(CENSUS_FIELD, qe.KeywordIndexParams(memory=qe.Memory.Cold))]
    schemas += [(k, qe.PayloadSchemaType.Bool) for k in pt.BOOL_FIELDS]
    schemas += [(k, qe.FloatIndexParams(memory=_placement(k))) for k in pt.FLOAT_FIELDS]
    for name, schema in schemas:
        if name not in existing:
            shard.update(qe.UpdateOperation.create_field_index(name, schema))


def _placement(name: str) -> qe.Memory | None:
    return None if name in HOT_FIELDS else qe.Memory.Cold
