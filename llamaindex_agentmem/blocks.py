"""Memory blocks for LlamaIndex's ``llama_index.core.memory.Memory``.

* :class:`LongTermMemoryBlock`: long-term memory on agentmem's Qdrant store. Messages the
  ``Memory`` flushes from its FIFO queue are consolidated (LLM extraction with conflict
  resolution when an ``llm`` is given, else conversation rounds as episodes); each ``get``
  recalls the memories most relevant to the current input, rendered as delimited data (the
  same ``<recalled_memories>`` block as every agentmem prompt, see :mod:`agentmem.context`).
* :class:`WorkingMemoryBlock`: the session's working memory (task stack, variables,
  hypotheses, scratchpad), most important first.
* :class:`FactMemoryBlock`: LlamaIndex's ``FactExtractionMemoryBlock`` whose facts persist:
  they are stored as semantic memories in the long-term store, so they outlive the process
  and are shared by the user's sessions.

All honour ``priority`` (0 = never truncated) and implement ``atruncate`` by dropping their
least important lines, so a tight ``token_limit`` shrinks them instead of dropping them whole.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.memory.memory_blocks.fact import FactExtractionMemoryBlock

from agentmem import (
    ChatModel,
    LongTermMemory,
    MemoryConsolidator,
    MemoryManager,
    MemoryService,
    RecordFilter,
    TokenCounter,
    WorkingMemory,
)
from agentmem.integration import (
    MEMORY_BLOCK_CLOSE,
    MEMORY_BLOCK_OPEN,
    InMemorySessionStore,
    escape_line,
    read_reply,
    render_memory_block,
    render_memory_line,
)
from llamaindex_agentmem._convert import text_of, to_agentmem_many
from llamaindex_agentmem._sources import long_term_of, working_of
from llamaindex_agentmem.adapters import as_chat_model

__all__ = ["FactMemoryBlock", "LongTermMemoryBlock", "WorkingMemoryBlock"]

FACT_SUBTYPE = "fact"
_BLOCK_KEY = "llamaindex_block"


def _latest_user_text(messages: list[ChatMessage] | None) -> str:
    for message in reversed(messages or []):
        if str(getattr(message.role, "value", message.role)) == "user":
            text = text_of(message)
            if text.strip():
                return text
    return ""


def _drop_lines(text: str, tokens: int, counter: TokenCounter, keep_head: int) -> str | None:
    """``text`` less its last lines (after ``keep_head`` header lines) until ``tokens``
    fewer; ``None`` when nothing of substance is left."""
    lines = text.split("\n")
    head, body, tail = lines[:keep_head], lines[keep_head:], []
    if body and body[-1] == MEMORY_BLOCK_CLOSE:
        tail = [body.pop()]
    target = counter.count_text(text) - tokens
    while body and counter.count_text("\n".join([*head, *body, *tail])) > target:
        body.pop()
    return "\n".join([*head, *body, *tail]) if body else None


def _render_facts(facts: list[str]) -> str:
    """Facts as the block shows them and as the extraction prompts show them to the model:
    one ``<fact>`` line each, escaped, so no fact can close its tag or the block around it
    (LlamaIndex's own rendering puts them raw)."""
    return "\n".join(f"<fact>{escape_line(fact)}</fact>" for fact in facts)


class LongTermMemoryBlock(BaseMemoryBlock[str]):
    """agentmem long-term memory as a ``Memory`` block (see the module docstring).

    Args:
        long_term: The user's :class:`~agentmem.LongTermMemory` (Qdrant Edge, or a Qdrant
            server through qdrant-client), a :class:`~agentmem.MemoryManager`, or a
            :class:`~agentmem.MemoryService` with ``user_id``.
        user_id: Whose memories, when ``long_term`` is a service.
        llm: LlamaIndex ``LLM`` or agentmem ``ChatModel`` extracting memories from flushed
            messages; ``None`` stores each round as an episode.
        **fields: The block's fields (``name``, ``priority``, ``top_k``, ...).

    Example:
        >>> from llama_index.core.memory import Memory
        >>> block = LongTermMemoryBlock(long_term=long_term, priority=1)  # doctest: +SKIP
        >>> memory = Memory.from_defaults(session_id="s1", memory_blocks=[block])  # doctest: +SKIP
    """

    name: str = Field(default="long_term_memory")
    description: str | None = Field(default="Memories recalled from earlier conversations.")
    top_k: int = Field(default=5, ge=1, le=1000)

    _long_term: LongTermMemory = PrivateAttr()
    _consolidator: MemoryConsolidator = PrivateAttr()
    _counter: TokenCounter = PrivateAttr()

    def __init__(
        self,
        *,
        long_term: LongTermMemory | MemoryManager | MemoryService,
        user_id: str | None = None,
        llm: Any = None,
        token_counter: TokenCounter | None = None,
        **fields: Any,
    ) -> None:
        memory = long_term_of(long_term, user_id, "LongTermMemoryBlock")
        super().__init__(**fields)
        chat_model: ChatModel | None = as_chat_model(llm)
        self._long_term = memory
        # Flushed messages arrive once; the watermark only has to live as long as the block.
        self._consolidator = MemoryConsolidator(
            memory, store=InMemorySessionStore(), llm=chat_model
        )
        self._counter = token_counter or TokenCounter()

    @property
    def long_term(self) -> LongTermMemory:
        """The long-term memory behind this block."""
        return self._long_term

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = _latest_user_text(messages)
        if not query:
            return ""
        hits = await self._long_term.aretrieve_memories(query, self.top_k)
        if not hits:
            return ""
        return render_memory_block([render_memory_line(h) for h in hits])

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if not messages:
            return
        session = str(messages[0].additional_kwargs.get("session_id") or "llamaindex")
        await self._consolidator.aconsolidate_session(
            to_agentmem_many(messages), session_id=session
        )

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the least relevant memories until ``tokens_to_truncate`` fewer tokens."""
        header = len(MEMORY_BLOCK_OPEN.split("\n"))
        return _drop_lines(content, tokens_to_truncate, self._counter, header)


class WorkingMemoryBlock(BaseMemoryBlock[str]):
    """agentmem working memory as a ``Memory`` block (see the module docstring).

    It takes no flushed messages (``accept_short_term_memory`` is off); each put counts a
    turn, so turn-limited variables expire. ``Memory`` puts the block between tags named
    after it (``<working_memory>``), so the block itself renders without tags: its label
    line and its items.

    Example:
        >>> from agentmem import WorkingMemory
        >>> wm = WorkingMemory()
        >>> _ = wm.push_task("book a flight")
        >>> block = WorkingMemoryBlock(working=wm)
        >>> block.name
        'working_memory'
    """

    name: str = Field(default="working_memory")
    description: str | None = Field(default="The agent's task state and notes.")
    accept_short_term_memory: bool = Field(default=False)
    max_tokens: int | None = Field(default=None, gt=0)

    _working: WorkingMemory = PrivateAttr()
    _counter: TokenCounter = PrivateAttr()

    def __init__(
        self,
        *,
        working: WorkingMemory | MemoryManager | MemoryService,
        user_id: str | None = None,
        session_id: str | None = None,
        token_counter: TokenCounter | None = None,
        **fields: Any,
    ) -> None:
        memory = working_of(working, user_id, session_id, "WorkingMemoryBlock")
        super().__init__(**fields)
        self._working = memory
        self._counter = token_counter or TokenCounter()

    @property
    def working(self) -> WorkingMemory:
        """The working memory behind this block."""
        return self._working

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        # Memory puts each block between tags named after it (<working_memory> here): the
        # block's own tags would nest inside them.
        return await self._working.aget_context_for_llm(self.max_tokens, tags=False)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await self._working.aadvance_turn()

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Re-render within fewer tokens (least important items go first)."""
        target = self._counter.count_text(content) - tokens_to_truncate
        if target <= 0:
            return None
        text = await self._working.aget_context_for_llm(target, tags=False)
        return text or None


class FactMemoryBlock(FactExtractionMemoryBlock):
    """``FactExtractionMemoryBlock`` whose facts persist in agentmem's long-term store.

    Facts are extracted by LlamaIndex's own prompts (``llm`` is a LlamaIndex ``LLM``), then
    stored as semantic memories (subtype ``fact``) of the user; a new block on the same
    store starts with them. Condensing replaces the stored set.

    Example:
        >>> block = FactMemoryBlock(long_term=long_term, llm=llm)  # doctest: +SKIP
        >>> await block.aget()  # facts from earlier processes  # doctest: +SKIP
        '<fact>Alice writes Python with tabs</fact>'
    """

    name: str = Field(default="persistent_facts")

    _long_term: LongTermMemory = PrivateAttr()
    _loaded: bool = PrivateAttr(default=False)
    _counter: TokenCounter = PrivateAttr()

    def __init__(
        self,
        *,
        long_term: LongTermMemory | MemoryManager | MemoryService,
        user_id: str | None = None,
        token_counter: TokenCounter | None = None,
        **fields: Any,
    ) -> None:
        memory = long_term_of(long_term, user_id, "FactMemoryBlock")
        super().__init__(**fields)
        self._long_term = memory
        self._counter = token_counter or TokenCounter()

    def _filter(self) -> RecordFilter:
        return RecordFilter(subtypes=(FACT_SUBTYPE,), metadata={_BLOCK_KEY: self.name})

    async def _aload(self) -> None:
        if self._loaded:
            return
        records = await self._long_term.aall_records(self._filter())
        stored = [r.content for r in sorted(records, key=lambda r: r.created_at)]
        self.facts = [*stored, *(f for f in self.facts if f not in stored)]
        self._loaded = True

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        await self._aload()
        return _render_facts(self.facts)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await self._aload()
        if messages:
            await self._extract(messages)
        await self._asave()

    async def _extract(self, messages: list[ChatMessage]) -> None:
        """LlamaIndex's extraction (and condensing past ``max_facts``), with its own prompts
        and parsing, but the facts shown to the model escaped: LlamaIndex puts them raw
        between ``<fact>`` tags inside ``<existing_facts>``, where a stored fact could close
        the block. What the model writes back is read as plain text."""
        prompt = self.fact_extraction_prompt_template.format_messages(
            existing_facts=_render_facts(self.facts)
        )
        response = await self.llm.achat(messages=[*messages, *prompt])
        for fact in self._parse_facts_xml(response.message.content or ""):
            text = read_reply(fact).strip()
            if text and text not in self.facts:
                self.facts.append(text)
        if len(self.facts) > self.max_facts:
            prompt = self.fact_condense_prompt_template.format_messages(
                existing_facts=_render_facts(self.facts), max_facts=self.max_facts
            )
            response = await self.llm.achat(messages=[*messages, *prompt])
            condensed = [
                text
                for fact in self._parse_facts_xml(response.message.content or "")
                if (text := read_reply(fact).strip())
            ]
            if condensed:  # an empty or unparsable answer keeps the facts (as LlamaIndex)
                self.facts = condensed

    async def _asave(self) -> None:
        records = await self._long_term.aall_records(self._filter())
        stored = {r.content: r for r in records}
        wanted = set(self.facts)
        for content, record in stored.items():
            if content not in wanted:
                await self._long_term.adelete_memory(record.id)
        new = [
            self._long_term.new_record(
                fact, "semantic", subtype=FACT_SUBTYPE, metadata={_BLOCK_KEY: self.name}
            )
            for fact in self.facts
            if fact not in stored
        ]
        await self._long_term.astore_records(new)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the newest facts from the rendered block (all stay stored)."""
        return _drop_lines(content, tokens_to_truncate, self._counter, 0)
