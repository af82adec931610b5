"""The systems of ``bench/peers.py``: agentmem and the libraries a user would pick instead.

Every system implements :class:`System`: ``ingest`` one conversation's turns (one memory
per turn, the text of ``agentmem.ingest.turn_text``) through the library's normal write
path, then ``search`` one question in that conversation's scope through its public
retrieval API, returning the dia_ids of the top-k items, best first.

Every system embeds with the same vectors: :class:`VectorTable` holds them (computed once
with agentmem's local all-MiniLM-L6-v2 and the benchmark disk cache), and each library gets
a *lookup* in its own embedding interface that returns the stored vector of a text and
raises :class:`LookupMiss` for any other text (never computes one silently):

* agentmem: :class:`LookupEmbedder` (``agentmem.embeddings.Embedder``);
* Mem0 and the LangGraph store: :func:`lookup_embeddings` (LangChain ``Embeddings``; Mem0's
  ``"langchain"`` embedder provider takes one);
* LlamaIndex: :func:`llama_lookup_embedding` (a ``BaseEmbedding``). ``VectorMemoryBlock``
  wraps each message as ``<message role='user'>TEXT</message>`` before embedding it; the
  lookup returns TEXT's vector for exactly that envelope, so the block stores the same
  vector as everyone else.

The optional libraries are imported inside the classes that use them, so importing this
module needs only agentmem.

Example:
    >>> table = VectorTable({"a": [1.0, 0.0]})
    >>> LookupEmbedder(table, "m").embed_documents(["a"])
    [[1.0, 0.0]]
    >>> table.vector("b")
    Traceback (most recent call last):
    ...
    bench._peers.LookupMiss: "no stored vector for the text 'b'"
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from agentmem.ingest import Turn, locomo_records, turn_text

__all__ = [
    "PEERS",
    "AgentmemSystem",
    "BM25System",
    "LangGraphSystem",
    "LlamaIndexSystem",
    "LookupEmbedder",
    "LookupMiss",
    "Mem0System",
    "System",
    "VectorTable",
    "bm25_tokens",
    "llama_lookup_embedding",
    "lookup_embeddings",
]

#: Records / operations per write call wherever a library takes batches (as bench/locomo.py).
BATCH_SIZE = 256


class LookupMiss(KeyError):
    """A library asked for the vector of a text that was not computed beforehand."""


class VectorTable:
    """Text -> vector, filled once; every lookup embedder reads from it.

    Args:
        vectors: The stored vectors by text (documents and queries alike: all-MiniLM-L6-v2
            has no query prompt, so a text has one vector whichever way it is embedded).
    """

    def __init__(self, vectors: Mapping[str, Sequence[float]]) -> None:
        self._vectors = {text: [float(x) for x in v] for text, v in vectors.items()}
        self.lookups = 0

    def __len__(self) -> int:
        return len(self._vectors)

    @property
    def dimension(self) -> int:
        """Length of the stored vectors."""
        return len(next(iter(self._vectors.values())))

    def vector(self, text: str) -> list[float]:
        """The stored vector of ``text``.

        Raises:
            LookupMiss: No vector was stored for ``text``.
        """
        found = self._vectors.get(text)
        if found is None:
            msg = f"no stored vector for the text {text[:60]!r}"
            raise LookupMiss(msg)
        self.lookups += 1
        return list(found)

    @classmethod
    def build(cls, embedder: Any, documents: Sequence[str], queries: Sequence[str]) -> VectorTable:
        """Embed ``documents`` and ``queries`` once with ``embedder`` (an agentmem
        ``Embedder``, normally the disk-cached local model).

        Raises:
            ValueError: A text got different vectors as a document and as a query.
        """
        docs = list(dict.fromkeys(documents))
        table: dict[str, list[float]] = dict(
            zip(docs, embedder.embed_documents(docs), strict=True) if docs else ()
        )
        for text in dict.fromkeys(queries):
            vector = embedder.embed_query(text)
            known = table.get(text, vector)
            if max(abs(a - b) for a, b in zip(known, vector, strict=True)) > 1e-5:
                msg = f"{text[:60]!r} has different document and query vectors"
                raise ValueError(msg)
            table[text] = vector
        return cls(table)


class LookupEmbedder:
    """agentmem's ``Embedder`` protocol over a :class:`VectorTable`."""

    def __init__(self, table: VectorTable, model_name: str) -> None:
        self.table = table
        self.model_name = model_name
        self.dimension = table.dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The stored vectors of ``texts``."""
        return [self.table.vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """The stored vector of ``text``."""
        return self.table.vector(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents`."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return self.embed_query(text)


def _langchain_embeddings_base() -> type:
    from langchain_core.embeddings import Embeddings

    return Embeddings


def lookup_embeddings(table: VectorTable) -> Any:
    """A LangChain ``Embeddings`` over ``table`` (for Mem0 and the LangGraph store)."""
    base = _langchain_embeddings_base()

    class _LookupEmbeddings(base):  # type: ignore[misc, valid-type]
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [table.vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return table.vector(text)

    return _LookupEmbeddings()


_ENVELOPE = re.compile(r"<message role='user'>(.*)</message>", re.S)


def llama_lookup_embedding(table: VectorTable, model_name: str) -> Any:
    """A LlamaIndex ``BaseEmbedding`` over ``table``; ``VectorMemoryBlock``'s message
    envelope ``<message role='user'>TEXT</message>`` is looked up as TEXT."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    def unwrap(text: str) -> str:
        match = _ENVELOPE.fullmatch(text)
        return match.group(1) if match else text

    class _LookupEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return table.vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return table.vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return table.vector(unwrap(text))

        async def _aget_text_embedding(self, text: str) -> list[float]:
            return table.vector(unwrap(text))

    return _LookupEmbedding(model_name=model_name, embed_batch_size=BATCH_SIZE)


_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    """rank_bm25's tokens: lowercased ``\\w+`` words (Unicode), no stemming, no stop words.

    Example:
        >>> bm25_tokens('Caroline said, "I went to a LGBTQ support group!"')
        ['caroline', 'said', 'i', 'went', 'to', 'a', 'lgbtq', 'support', 'group']
    """
    return _WORD.findall(text.lower())


class System(Protocol):
    """One retrieval system under test."""

    name: str
    #: Installed versions of the packages it measures.
    versions: dict[str, str]
    #: What makes this system's comparison uneven (shown in the report).
    notes: list[str]

    def ingest(self, scope: str, turns: Sequence[Turn], clock: datetime | None) -> None:
        """Store one conversation's turns (one memory per turn) in ``scope``."""

    def search(self, scope: str, question: str, k: int) -> list[set[str]]:
        """The top ``k`` items for ``question`` in ``scope``: each item's dia_ids."""

    def close(self) -> None:
        """Release files and clients."""


def _version(*packages: str) -> str:
    """The installed version of the first of ``packages`` found (older installs of this
    project may carry its former distribution name)."""
    from importlib.metadata import PackageNotFoundError, version

    for package in packages:
        try:
            return version(package)
        except PackageNotFoundError:
            continue
    return "not installed"


class _TextIds:
    """dia_id of each turn text per scope, for libraries whose hits carry only the text."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[str, str]] = {}

    def add(self, scope: str, turns: Sequence[Turn]) -> None:
        mine = self._ids.setdefault(scope, {})
        for turn in turns:
            text = turn_text(turn)
            if mine.setdefault(text, turn.dia_id) != turn.dia_id:
                msg = f"{scope}: two turns share the text {text[:60]!r}; ids would be ambiguous"
                raise ValueError(msg)

    def get(self, scope: str, text: str) -> str:
        return self._ids[scope][text]


class AgentmemSystem:
    """agentmem's ``LongTermMemory`` on Qdrant Edge (a temporary directory), library
    defaults (``RankingConfig()``: hybrid), written by ``agentmem.ingest.locomo_records``.

    Args:
        table: The vectors.
        model_name: The embedder's model name.
        context_turns: Previous turns of the session indexed with each turn on the BM25 side
            (the write path's default is 2; 0 indexes the turn alone, like the peers).
        name: Row label.
    """

    def __init__(
        self, table: VectorTable, model_name: str, *, context_turns: int, name: str
    ) -> None:
        from agentmem.long_term.ranking import RankingConfig
        from agentmem.stores.qdrant.edge import QdrantEdgeStore

        self.name = name
        self.versions = {"tiered-agentmem": _version("tiered-agentmem", "agentmem")}
        self.notes = [f"BM25 side indexes each turn with {context_turns} previous turns"]
        self._embedder = LookupEmbedder(table, model_name)
        self._context_turns = context_turns
        self._ranking = RankingConfig()
        self._tmp = tempfile.TemporaryDirectory(prefix="agentmem-peers-")
        self._store = QdrantEdgeStore(Path(self._tmp.name) / "long_term", dimension=table.dimension)
        self._memories: dict[str, Any] = {}

    def ingest(self, scope: str, turns: Sequence[Turn], clock: datetime | None) -> None:
        from agentmem.long_term.memory import LongTermMemory

        memory = LongTermMemory(
            store=self._store,
            embedder=self._embedder,
            user_id=scope,
            ranking=self._ranking,
            clock=None if clock is None else (lambda: clock),
            on_close=lambda: None,
        )
        self._memories[scope] = memory
        records = locomo_records(memory, list(turns), context_turns=self._context_turns)
        for i in range(0, len(records), BATCH_SIZE):
            memory.store_records(records[i : i + BATCH_SIZE])

    def search(self, scope: str, question: str, k: int) -> list[set[str]]:
        hits = self._memories[scope].retrieve_memories(question, top_k=k, touch=False)
        return [set(h.record.source_message_ids) for h in hits]

    def close(self) -> None:
        self._store.close()
        self._tmp.cleanup()


class Mem0System:
    """Mem0 ``Memory`` with ``infer=False`` on qdrant-client's in-memory local mode.

    No LLM is called: ``infer=False`` stores each message as it is. Mem0 still builds an
    LLM from its config, so it gets a LangChain fake chat model with no answers (a call
    would raise). Telemetry is off (``MEM0_TELEMETRY=False``, set by ``bench/peers.py``
    before the import) and Mem0's files go to a temporary ``MEM0_DIR``.
    """

    def __init__(self, table: VectorTable, history_db: Path) -> None:
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from mem0 import Memory  # type: ignore[import-untyped]
        from qdrant_client import QdrantClient

        self.name = "Mem0 (infer=False, Qdrant local in memory)"
        self.versions = {"mem0ai": _version("mem0ai"), "qdrant-client": _version("qdrant-client")}
        self._client = QdrantClient(location=":memory:")
        self._memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "peers",
                        "embedding_model_dims": table.dimension,
                        "client": self._client,
                    },
                },
                "embedder": {
                    "provider": "langchain",
                    "config": {"model": lookup_embeddings(table)},
                },
                "llm": {
                    "provider": "langchain",
                    "config": {"model": GenericFakeChatModel(messages=iter(()))},
                },
                "history_db_path": str(history_db),
            }
        )
        keyword = getattr(self._memory.vector_store, "_get_bm25_encoder", lambda: None)()
        self.notes = [
            "dense only: its BM25 needs fastembed's Qdrant/bm25 model (a hub download)"
            if keyword is None
            else "hybrid: dense + fastembed BM25",
            "search keeps hits with cosine >= 0.1 (its default threshold)",
            "no lemmatizing or entity boosts offline (spaCy model is a download)",
        ]
        self._ids: dict[str, dict[str, str]] = {}

    def ingest(self, scope: str, turns: Sequence[Turn], clock: datetime | None) -> None:
        for i in range(0, len(turns), BATCH_SIZE):
            batch = turns[i : i + BATCH_SIZE]
            messages = [{"role": "user", "content": turn_text(t)} for t in batch]
            out = self._memory.add(messages, user_id=scope, infer=False)
            added = out["results"]
            if len(added) != len(batch):
                msg = f"Mem0 stored {len(added)} of {len(batch)} messages"
                raise RuntimeError(msg)
            mine = self._ids.setdefault(scope, {})
            for turn, item in zip(batch, added, strict=True):
                mine[item["id"]] = turn.dia_id

    def search(self, scope: str, question: str, k: int) -> list[set[str]]:
        out = self._memory.search(question, top_k=k, filters={"user_id": scope})
        # A hit from another conversation would raise KeyError here: the filter is checked.
        return [{self._ids[scope][item["id"]]} for item in out["results"]]

    def close(self) -> None:
        self._client.close()


class LlamaIndexSystem:
    """LlamaIndex ``VectorMemoryBlock`` (the long-term block of ``Memory``) on Qdrant
    local mode in memory (``llama-index-vector-stores-qdrant``, async client: the block's
    ``aput``/``aget`` are async).

    One ``aput`` per turn, so each turn is one node (``Memory`` itself would flush several
    messages into one node). The conversation is the block's ``session_id`` filter, with one
    block per conversation over the one shared store: a block keeps the ``session_id``
    filter of its first ``aget`` in its ``query_kwargs`` and never replaces it
    (llama-index-core 0.14.25), so a block shared by conversations searches the first one
    only. A pass-through node postprocessor records the ranked nodes that ``aget`` formats
    into text.
    """

    def __init__(self, table: VectorTable, model_name: str) -> None:
        from llama_index.core.memory import VectorMemoryBlock
        from llama_index.core.postprocessor.types import BaseNodePostprocessor
        from llama_index.vector_stores.qdrant import QdrantVectorStore
        from qdrant_client import AsyncQdrantClient

        seen: list[Any] = []

        class _Recorder(BaseNodePostprocessor):
            def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
                seen[:] = nodes
                return nodes

        self.name = "LlamaIndex VectorMemoryBlock (Qdrant local in memory)"
        self.versions = {
            "llama-index-core": _version("llama-index-core"),
            "llama-index-vector-stores-qdrant": _version("llama-index-vector-stores-qdrant"),
        }
        self.notes = [
            "dense only",
            "one node per turn (Memory would flush batches of messages)",
            "one block per conversation: a shared block keeps its first session filter",
        ]
        self._loop = asyncio.new_event_loop()
        self._aclient = AsyncQdrantClient(location=":memory:")
        self._store = QdrantVectorStore(collection_name="peers", aclient=self._aclient)
        self._embed_model = llama_lookup_embedding(table, model_name)
        self._recorder = _Recorder()
        self._seen = seen
        self._block_type = VectorMemoryBlock
        self._blocks: dict[str, Any] = {}
        self._texts = _TextIds()

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def ingest(self, scope: str, turns: Sequence[Turn], clock: datetime | None) -> None:
        from llama_index.core.llms import ChatMessage

        self._texts.add(scope, turns)
        block = self._blocks[scope] = self._block_type(
            vector_store=self._store,
            embed_model=self._embed_model,
            similarity_top_k=10,
            node_postprocessors=[self._recorder],
        )
        for turn in turns:
            message = ChatMessage(
                role="user", content=turn_text(turn), additional_kwargs={"session_id": scope}
            )
            self._run(block.aput([message]))

    def search(self, scope: str, question: str, k: int) -> list[set[str]]:
        from llama_index.core.llms import ChatMessage

        block = self._blocks[scope]
        block.similarity_top_k = k
        self._seen.clear()
        self._run(
            block.aget(messages=[ChatMessage(role="user", content=question)], session_id=scope)
        )
        out = []
        for hit in self._seen:
            match = _ENVELOPE.fullmatch(hit.node.get_content())
            if match is None:
                msg = f"unexpected node text {hit.node.get_content()[:60]!r}"
                raise ValueError(msg)
            out.append({self._texts.get(scope, match.group(1))})
        return out

    def close(self) -> None:
        self._run(self._aclient.close())
        self._loop.close()


class LangGraphSystem:
    """LangGraph ``InMemoryStore`` with an ``index`` (brute-force cosine over the
    namespace); one namespace per conversation, written with ``batch`` of ``PutOp``."""

    def __init__(self, table: VectorTable) -> None:
        from langgraph.store.memory import InMemoryStore

        self.name = "LangGraph InMemoryStore (index)"
        self.versions = {"langgraph": _version("langgraph")}
        self.notes = ["dense only", "RAM only (no persistence)"]
        self._store = InMemoryStore(
            index={"dims": table.dimension, "embed": lookup_embeddings(table), "fields": ["text"]}
        )

    def ingest(self, scope: str, turns: Sequence[Turn], clock: datetime | None) -> None:
        from langgraph.store.base import PutOp

        namespace = ("locomo", scope)
        ops = [PutOp(namespace, t.dia_id, {"text": turn_text(t)}) for t in turns]
        for i in range(0, len(ops), BATCH_SIZE):
            self._store.batch(ops[i : i + BATCH_SIZE])

    def search(self, scope: str, question: str, k: int) -> list[set[str]]:
        hits = self._store.search(("locomo", scope), query=question, limit=k)
        return [{h.key} for h in hits]

    def close(self) -> None:
        return None


class BM25System:
    """rank_bm25's ``BM25Okapi`` (default k1=1.5, b=0.75, epsilon=0.25), one index per
    conversation (it has no filter), over :func:`bm25_tokens`; the top k by score."""

    def __init__(self) -> None:
        self.name = "rank_bm25 BM25Okapi"
        self.versions = {"rank-bm25": _version("rank-bm25")}
        self.notes = [
            "lexical only; lowercased \\w+ tokens, no stemming or stop words",
            "one index per conversation (IDF per conversation)",
        ]
        self._indexes: dict[str, tuple[Any, list[str]]] = {}

    def ingest(self, scope: str, turns: Sequence[Turn], clock: datetime | None) -> None:
        from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

        corpus = [bm25_tokens(turn_text(t)) for t in turns]
        self._indexes[scope] = (BM25Okapi(corpus), [t.dia_id for t in turns])

    def search(self, scope: str, question: str, k: int) -> list[set[str]]:
        index, ids = self._indexes[scope]
        scores = index.get_scores(bm25_tokens(question))
        top = sorted(range(len(ids)), key=lambda i: -scores[i])[:k]
        return [{ids[i]} for i in top]

    def close(self) -> None:
        return None


#: Peer name -> (pip package that must be importable, factory(table, model_name, tmp)).
PEERS: dict[str, tuple[str, Callable[[VectorTable, str, Path], System]]] = {
    "mem0": ("mem0", lambda table, model, tmp: Mem0System(table, tmp / "mem0-history.db")),
    "llamaindex": (
        "llama_index.vector_stores.qdrant",
        lambda table, model, tmp: LlamaIndexSystem(table, model),
    ),
    "langgraph": ("langgraph.store.memory", lambda table, model, tmp: LangGraphSystem(table)),
    "bm25": ("rank_bm25", lambda table, model, tmp: BM25System()),
}
