"""One context assembler: the blocks of a prompt, fitted into an exact token budget.

Every prompt agentmem builds goes through :func:`assemble_context`, called by the one
context pipeline, ``MemoryManager.gather_context`` (which does the reads first), and so by
``MemoryManager.build_context``, the LangChain ``AgentMemoryMiddleware`` and the LlamaIndex
``AgentMemory.get``. It takes :mod:`blocks <agentmem.context.blocks>` and lays them out as

1. one system message: :class:`InstructionsBlock` (the system prompt),
   :class:`SummaryBlock` (a ``<conversation_summary>``), :class:`WorkingBlock`
   (``<working_memory>``), :class:`RecalledBlock` (``<recalled_memories>``, labelled as
   data), in this order, joined by a blank line;
2. the history: a :class:`ViewBlock` (a short-term memory's view: its system messages, its
   summary message and the newest turns) or a :class:`MessagesBlock` (a given conversation);
3. the :class:`QueryBlock` as the last user message.

Priorities (what is filled first; the drop order is the reverse):

1. required: the system prompt, tool schemas, the query (or a ``MessagesBlock``'s latest
   unit, or a ``ViewBlock``'s ``latest``) and the reply priming; if they alone do not fit,
   :class:`ContextBudgetError` (:func:`check_required` raises it before any I/O);
2. working memory, up to ``WorkingBlock.share`` of the budget (its least important items
   go first, see :meth:`agentmem.WorkingMemory.get_context_for_llm`);
3. recalled memories, up to ``RecalledBlock.share``, best first, whole lines only;
4. the summary block, whole or not at all;
5. the history, newest first, in whole units (a tool call with its results).

So under pressure the oldest messages go first, then the summary, then the least relevant
memories, then the least important working-memory items. What was left out is reported in
:attr:`BuiltContext.omitted`.

No fact twice: a recalled memory whose source messages (``source_message_ids``) are all in
the history sent is left out (counted in ``omitted["long_term_in_recent"]``); the room it
took goes to the history.

Exactness: ``token_count`` is :meth:`TokenCounter.count_messages` of ``messages`` with the
tool schemas (reply priming included), and it is never above ``max_tokens``. Each block is
rendered once and counted once (history messages carry their cached counts; a recalled
line is counted when first rendered); the system message is counted exactly as a whole and
the ledger attributes it section by section, framing and boundary merges to the first
section, so the ledger's values sum to ``token_count`` exactly. ``text`` renders the chat in
ChatML (:func:`render_chatml`); counted with its markers as single tokens it is exactly
``token_count - ledger.get("tools", 0)`` tokens.

Example:
    >>> from agentmem import TokenCounter
    >>> built = assemble_context(
    ...     [InstructionsBlock("Be brief."), WorkingBlock(lambda n: ""), QueryBlock("tabs?")],
    ...     counter=TokenCounter("gpt-4o"), max_tokens=200)
    >>> [m["role"] for m in built.messages], built.token_count
    (['system', 'user'], 16)
"""

from __future__ import annotations

from agentmem.context import assembler, blocks, render
from agentmem.context.assembler import *
from agentmem.context.blocks import *
from agentmem.context.render import *

__all__ = [*assembler.__all__, *blocks.__all__, *render.__all__]
