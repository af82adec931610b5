"""The context assembler: blocks in, one prompt within an exact token budget out.

See :mod:`agentmem.context` for the layout, the priorities and the exactness rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentmem._util.checks import check_positive_int
from agentmem.context.blocks import (
    Block,
    InstructionsBlock,
    MessagesBlock,
    QueryBlock,
    RecalledBlock,
    SummaryBlock,
    ViewBlock,
    WorkingBlock,
)
from agentmem.context.render import (
    MEMORY_BLOCK_CLOSE,
    MEMORY_BLOCK_OPEN,
    SEPARATOR,
    render_chatml,
    render_memory_block,
    render_memory_line,
    render_summary,
)
from agentmem.errors import ConfigurationError, ContextBudgetError
from agentmem.long_term.store import ScoredRecord
from agentmem.short_term.view import ShortTermView
from agentmem.tokens import REPLY_PRIMING_TOKENS, TokenCounter
from agentmem.types import Message

__all__ = [
    "BuiltContext",
    "ContextBudgetError",
    "assemble_context",
    "check_max_tokens",
    "check_required",
    "check_share",
    "pack_context",
]

#: Sections of the system message, in the order they appear.
SECTION_ORDER = ("system", "summary", "working_memory", "long_term")
_SHRINK_TRIES = 4
B = TypeVar("B")


@dataclass
class BuiltContext:
    """A prompt assembled within a token budget.

    Attributes:
        messages: OpenAI-style message dicts to send, in order.
        text: The same chat rendered in ChatML (tool schemas are not part of it).
        ledger: Section -> exact tokens (``system``, ``summary``, ``working_memory``,
            ``long_term``, ``recent``, ``query``, ``tools``, ``reply_priming``; a section
            is present when something of it was sent); sums to ``token_count``.
        token_count: Exact chat-format tokens of ``messages``, tool schemas included.
        max_tokens: The budget it was assembled into.
        recalled: Long-term memories included, best first.
        omitted: Section -> items left out for lack of room (``long_term``: memories,
            ``recent``: messages, ``summary``: 1 for a summary block left out);
            ``long_term_in_recent`` counts recalled memories left out because the history
            sent shows them.
        system: Content of the leading system message (``""`` when there is none).
        history: The history messages sent (a view's summary message included), in order.
        kept: Indices of the :class:`~agentmem.context.MessagesBlock` messages sent.
    """

    messages: list[dict[str, Any]]
    text: str
    ledger: dict[str, int]
    token_count: int
    max_tokens: int
    recalled: list[ScoredRecord] = field(default_factory=list)
    omitted: dict[str, int] = field(default_factory=dict)
    system: str = ""
    history: list[Message] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """The budget as a bar, the exact ledger and the messages, collapsed (notebooks)."""
        from agentmem.inspector.reprs import context_repr

        return context_repr(self)


class _Blocks:
    """The blocks given, one of each kind at most, checked."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        seen: dict[type[Any], Block] = {}
        for block in blocks:
            kind = type(block)
            if kind not in _KINDS:
                msg = f"not a context block: {block!r}"
                raise ConfigurationError(msg)
            if kind in seen:
                msg = f"more than one {kind.__name__} given"
                raise ConfigurationError(msg)
            texts = InstructionsBlock | SummaryBlock | QueryBlock
            if isinstance(block, texts) and not isinstance(block.text, str):
                what, got = _TEXT_KINDS[kind], type(block.text).__name__
                msg = f"{what} ({kind.__name__}) must be a str, got {got}; pass the text itself"
                raise ConfigurationError(msg)
            if isinstance(block, WorkingBlock | RecalledBlock) and not 0.0 <= block.share <= 1.0:
                msg = f"{kind.__name__}.share must be in [0, 1], got {block.share!r}"
                raise ConfigurationError(msg)
            seen[kind] = block
        if ViewBlock in seen and MessagesBlock in seen:
            msg = "give a ViewBlock or a MessagesBlock as the history, not both"
            raise ConfigurationError(msg)
        self.instructions = _one(seen, InstructionsBlock)
        self.summary = _one(seen, SummaryBlock)
        self.working = _one(seen, WorkingBlock)
        self.recalled = _one(seen, RecalledBlock)
        self.view = _one(seen, ViewBlock)
        self.messages = _one(seen, MessagesBlock)
        self.query = _one(seen, QueryBlock)


_KINDS = (
    InstructionsBlock,
    SummaryBlock,
    WorkingBlock,
    RecalledBlock,
    ViewBlock,
    MessagesBlock,
    QueryBlock,
)


_TEXT_KINDS: dict[type[Any], str] = {
    InstructionsBlock: "the system prompt",
    SummaryBlock: "the summary",
    QueryBlock: "the query",
}


def _one(seen: Mapping[type[Any], Block], kind: type[B]) -> B | None:
    block = seen.get(kind)
    return block if isinstance(block, kind) else None


class _Request:
    """The request being assembled: system sections, required history, query and tools,
    counted exactly. Each distinct system content is tokenized once (cached)."""

    def __init__(
        self,
        counter: TokenCounter,
        tools: Sequence[Mapping[str, Any]],
        query: Message | None,
        required: Sequence[Message],
    ) -> None:
        self.counter = counter
        self.sections: dict[str, str] = {}
        self._frame = counter.count_message(Message(role="system", content=""))
        self._content_tokens: dict[str, int] = {}
        self.query = query
        self.query_tokens = counter.count_message(query) if query is not None else 0
        self.required = list(required)
        self.required_tokens = sum(counter.count_message(m) for m in required)
        self.tools = list(tools)
        self._tools_tokens: dict[bool, int] = {}

    def content(self, extra: Mapping[str, str] | None = None) -> str:
        sections = {**self.sections, **(extra or {})}
        return SEPARATOR.join(sections[k] for k in SECTION_ORDER if sections.get(k))

    def content_tokens(self, content: str) -> int:
        cached = self._content_tokens.get(content)
        if cached is None:
            cached = self._content_tokens[content] = self.counter.count_text(content)
        return cached

    def head_tokens(self, extra: Mapping[str, str] | None = None) -> int:
        """Tokens of the system message (``0`` when it would be empty)."""
        content = self.content(extra)
        return self._frame + self.content_tokens(content) if content else 0

    def tools_tokens(self, has_system: bool) -> int:
        cached = self._tools_tokens.get(has_system)
        if cached is None:
            cached = self.counter.count_tools(self.tools, has_system=has_system)
            self._tools_tokens[has_system] = cached
        return cached

    def total(
        self,
        extra: Mapping[str, str] | None = None,
        history: int = 0,
        history_has_system: bool = False,
    ) -> int:
        """Exact tokens of the request with ``extra`` sections and ``history`` more tokens
        of history messages (the required ones are always counted)."""
        head = self.head_tokens(extra)
        has_system = bool(head) or history_has_system or _has_system(self.required)
        return (
            head
            + self.required_tokens
            + history
            + self.query_tokens
            + self.tools_tokens(has_system)
            + REPLY_PRIMING_TOKENS
        )


def _has_system(messages: Sequence[Message]) -> bool:
    return any(m.role == "system" for m in messages)


def assemble_context(
    blocks: Sequence[Block],
    *,
    counter: TokenCounter,
    max_tokens: int,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> BuiltContext:
    """Assemble ``blocks`` into one prompt of at most ``max_tokens`` tokens, exactly.

    See :mod:`agentmem.context` for the layout and the priorities.

    Args:
        blocks: At most one block of each kind, and one history block (a
            :class:`~agentmem.context.ViewBlock` or a :class:`~agentmem.context.MessagesBlock`).
        counter: Token counter of the target model.
        max_tokens: The budget, tool schemas and reply priming included.
        tools: OpenAI tool schemas sent with the request (counted, not rendered).

    Raises:
        ContextBudgetError: What must be sent does not fit.
        ConfigurationError: ``max_tokens`` is not an integer >= 1, a bad block, two of a
            kind, or a share outside ``[0, 1]``.

    Example:
        >>> from agentmem import TokenCounter
        >>> built = assemble_context([InstructionsBlock("Be brief."), QueryBlock("hi")],
        ...     counter=TokenCounter("gpt-4o"), max_tokens=100)
        >>> built.messages
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]
        >>> built.ledger
        {'system': 7, 'query': 5, 'reply_priming': 3}
    """
    given, request, tail = _required(blocks, counter, max_tokens, tools)

    if given.working is not None:
        _fit_working(request, given.working, max_tokens)

    omitted: dict[str, int] = {}
    history = _History(request, given, tail, max_tokens)
    hits = list(given.recalled.hits) if given.recalled is not None else []
    share = given.recalled.share if given.recalled is not None else 0.0
    lines = _Lines(counter)
    summary = render_summary(given.summary.text) if given.summary and given.summary.text else ""
    # Pack the recalled memories, the summary, then the history into what is left. A memory
    # whose source messages all made it into the history would show the same thing twice:
    # drop it and pack again, never letting the memories grow past their previous size, so
    # the history can only widen and every dropped memory stays visible there.
    candidates = hits
    memory_cap = max_tokens
    duplicates = 0
    recalled: list[ScoredRecord] = []
    for _ in range(len(hits) + 1):
        request.sections.pop("long_term", None)
        request.sections.pop("summary", None)
        limit = min(memory_cap, request.total() + int(max_tokens * share))
        recalled = lines.fit(request, candidates, limit)
        if recalled:
            request.sections["long_term"] = lines.block(recalled)
        if summary and request.total({"summary": summary}) <= max_tokens:
            request.sections["summary"] = summary
        history.fill()
        shown = {m.id for m in history.messages}
        covered = {id(h) for h in recalled if _shown_in(h, shown)}
        if not covered:
            break
        duplicates += len(covered)
        candidates = [h for h in candidates if id(h) not in covered]
        memory_cap = request.total({"summary": ""})

    if len(recalled) + duplicates < len(hits):
        omitted["long_term"] = len(hits) - len(recalled) - duplicates
    if duplicates:
        omitted["long_term_in_recent"] = duplicates
    if history.omitted:
        omitted["recent"] = history.omitted
    if (summary and "summary" not in request.sections) or history.summary_dropped:
        omitted["summary"] = 1
    return _built(request, history, recalled, omitted, max_tokens)


def check_required(
    blocks: Sequence[Block],
    *,
    counter: TokenCounter,
    max_tokens: int,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """Raise what :func:`assemble_context` would raise for what must be sent, without
    assembling: callers that read and write before they assemble (recalling records each
    memory's access, rendering working memory deletes expired variables) call it first with
    the blocks they have, so that a prompt that cannot be built changes nothing.

    Raises:
        ContextBudgetError: The system prompt, tool schemas, query or latest unit (of a
            :class:`MessagesBlock`, or a :class:`ViewBlock`'s ``latest``) and the reply
            priming alone exceed ``max_tokens``.
        ConfigurationError: ``max_tokens`` is not an integer >= 1, or a bad block.

    Example:
        >>> from agentmem import TokenCounter
        >>> check_required([QueryBlock("hi")], counter=TokenCounter("gpt-4o"), max_tokens=100)
        >>> check_required([QueryBlock("hi " * 50)], counter=TokenCounter("gpt-4o"),
        ...     max_tokens=20)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentmem.errors.ContextBudgetError: query alone take 58 tokens, over max_tokens=20; ...
    """
    _required(blocks, counter, max_tokens, tools)


def _required(
    blocks: Sequence[Block],
    counter: TokenCounter,
    max_tokens: int,
    tools: Sequence[Mapping[str, Any]] | None,
) -> tuple[_Blocks, _Request, Sequence[int]]:
    """The blocks checked, the request with what must be sent, and the indices of a
    :class:`MessagesBlock`'s required latest unit; raises if what must be sent overflows."""
    check_max_tokens(max_tokens)
    given = _Blocks(blocks)
    query = Message(role="user", content=given.query.text) if given.query else None
    units = given.messages.units if given.messages is not None else ()
    tail = units[-1] if units and given.messages is not None and given.messages.keep_latest else ()
    required = [given.messages.messages[i] for i in tail] if given.messages is not None else []
    if given.view is not None:
        required = list(given.view.latest)
    request = _Request(counter, tools or [], query, required)
    if given.instructions is not None and given.instructions.text:
        request.sections["system"] = given.instructions.text
    _check_required(request, given, max_tokens)
    return given, request, tail


def check_max_tokens(max_tokens: object) -> int:
    """``max_tokens`` if it is a usable prompt budget (an ``int`` >= 1), else
    :class:`~agentmem.errors.ConfigurationError` saying so (``None``, ``"100"``, ``nan``,
    ``-1``). :func:`assemble_context` and :func:`check_required` call it; so do the
    objects that take a budget when they are made (the LangChain middleware).

    Example:
        >>> check_max_tokens(2000)
        2000
        >>> check_max_tokens("100")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentmem.errors.ConfigurationError: max_tokens must be an integer >= 1, got '100'; ...
    """
    return check_positive_int(
        max_tokens, "max_tokens", hint="; pass the prompt's token budget, e.g. max_tokens=2000"
    )


def check_share(share: object, name: str) -> float:
    """``share`` if it is a usable share of a budget (a number in ``[0, 1]``, not a bool),
    else :class:`~agentmem.errors.ConfigurationError` naming ``name``. The context
    pipeline calls it before any I/O; so do the objects that take a share when they are
    made (the LangChain middleware).

    Example:
        >>> check_share(0.3, "memory_share")
        0.3
        >>> check_share(2, "working_share")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentmem.errors.ConfigurationError: working_share must be in [0, 1], got 2
    """
    if isinstance(share, bool) or not isinstance(share, int | float):
        msg = f"{name} must be a number in [0, 1], got {share!r}"
        raise ConfigurationError(msg)
    if not 0.0 <= share <= 1.0:
        msg = f"{name} must be in [0, 1], got {share!r}"
        raise ConfigurationError(msg)
    return share


def _check_required(request: _Request, given: _Blocks, max_tokens: int) -> None:
    fixed = request.total()
    if fixed <= max_tokens:
        return
    parts = [
        name
        for name, present in (
            ("the system prompt", "system" in request.sections),
            ("tool schemas", bool(request.tools)),
            ("query", given.query is not None),
            ("latest message", bool(request.required)),
        )
        if present
    ] or ["the reply priming"]
    what = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    advice = "raise max_tokens or shorten them"
    if request.tools:
        advice = "raise max_tokens, shorten the prompt or use fewer tools"
    msg = f"{what} alone take {fixed} tokens, over max_tokens={max_tokens}; {advice}"
    raise ContextBudgetError(msg)


def _fit_working(request: _Request, working: WorkingBlock, max_tokens: int) -> None:
    """Working memory within its share: rendered for the room left, and again smaller only
    when the block costs a little more inside the message (boundary merges, framing)."""
    used = request.total()
    cap = min(max_tokens, used + int(max_tokens * working.share))
    room = cap - used
    for _ in range(_SHRINK_TRIES):
        if room <= 0:
            return
        text = working.text_for(room)
        if not text:
            return
        over = request.total({"working_memory": text}) - cap
        if over <= 0:
            request.sections["working_memory"] = text
            return
        room -= over


class _Lines:
    """Recalled memories as lines: each rendered once and counted once per assembly."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._lines: dict[int, tuple[str, int]] = {}
        self._frame = MEMORY_BLOCK_OPEN + "\n" + MEMORY_BLOCK_CLOSE

    def line(self, hit: ScoredRecord) -> tuple[str, int]:
        found = self._lines.get(id(hit))
        if found is None:
            text = render_memory_line(hit)
            found = self._lines[id(hit)] = (text, self.counter.count_text(text + "\n"))
        return found

    def block(self, hits: Sequence[ScoredRecord]) -> str:
        return render_memory_block([self.line(h)[0] for h in hits])

    def fit(
        self, request: _Request, hits: Sequence[ScoredRecord], limit: int
    ) -> list[ScoredRecord]:
        """The longest prefix of ``hits`` whose block keeps the request within ``limit``
        (whole lines, best first). Lines are added by their own counts; the result is then
        checked exactly (a line can merge with its neighbour) and adjusted."""
        if not hits:
            return []
        estimate = request.total({"long_term": self._frame})
        k = 0
        while k < len(hits) and estimate + self.line(hits[k])[1] <= limit:
            estimate += self.line(hits[k])[1]
            k += 1

        def fits(n: int) -> bool:
            return n == 0 or request.total({"long_term": self.block(hits[:n])}) <= limit

        while k > 0 and not fits(k):
            k -= 1
        while k < len(hits) and fits(k + 1):
            k += 1
        return list(hits[:k])


class _History:
    """The history block: a short-term view asked for with the room left, or the given
    messages kept newest first in whole units."""

    def __init__(
        self, request: _Request, given: _Blocks, tail: Sequence[int], max_tokens: int
    ) -> None:
        self.request = request
        self.view_block = given.view
        self.messages_block = given.messages
        self.tail = list(tail)
        self.max_tokens = max_tokens
        self.messages: list[Message] = []
        self.tokens = 0  # of ``messages``, as the view or the walk counted them
        self.kept: list[int] = []
        self.omitted = 0
        self.summary_dropped = False  # a view's summary message, left out for its latest unit

    def fill(self) -> None:
        if self.view_block is not None:
            self._fill_view(self.view_block.view_for)
        elif self.messages_block is not None:
            self._fill_messages(self.messages_block)

    def _fill_view(self, view_for: Callable[[int], ShortTermView]) -> None:
        # The view's latest unit, when required, was reserved in the request's total: the
        # view gets that room back, shows the unit first (it fills newest first), and
        # anything else only in what is left.
        request = self.request
        room = self.max_tokens - request.total() + request.required_tokens
        view = view_for(room + REPLY_PRIMING_TOKENS) if room > 0 else None
        self.messages = list(view.messages) if view is not None else []
        self.tokens = view.token_count - REPLY_PRIMING_TOKENS if view is not None else 0
        self.omitted = view.omitted if view is not None else 0
        self.summary_dropped = False
        shown = {(m.id, m.content) for m in self.messages}
        if all((m.id, m.content) in shown for m in request.required):
            return
        # The view's own head (system messages, its summary) or its own cap crowded the unit
        # out, or cut it: send the unit alone, whole, in the room reserved for it.
        required = {m.id for m in request.required}
        logged = [m for m in self.messages if not m.metadata.get("agentmem_summary")]
        self.summary_dropped = len(logged) < len(self.messages)
        self.omitted += sum(1 for m in logged if m.id not in required)
        self.omitted -= len(required - {m.id for m in logged})
        self.messages = list(request.required)
        self.tokens = request.required_tokens

    def _fill_messages(self, block: MessagesBlock) -> None:
        counter, messages = self.request.counter, block.messages
        keep = list(self.tail)
        extra, has_system = 0, False
        older = block.units[:-1] if self.tail else block.units
        for unit in reversed(older):
            if messages[unit[0]].role == "tool":
                continue  # an orphan tool result is never sent
            size = sum(counter.count_message(messages[i]) for i in unit)
            unit_system = _has_system([messages[i] for i in unit])
            total = self.request.total(None, extra + size, has_system or unit_system)
            if total > self.max_tokens:
                break
            keep = [*unit, *keep]
            extra, has_system = extra + size, has_system or unit_system
        self.kept = keep
        self.messages = [messages[i] for i in keep]
        self.tokens = self.request.required_tokens + extra
        self.omitted = len(messages) - len(keep)


def _shown_in(hit: ScoredRecord, message_ids: set[str]) -> bool:
    """Whether every message ``hit`` was drawn from is among ``message_ids``."""
    sources = hit.record.source_message_ids
    return bool(sources) and all(s in message_ids for s in sources)


def _built(
    request: _Request,
    history: _History,
    recalled: list[ScoredRecord],
    omitted: dict[str, int],
    max_tokens: int,
) -> BuiltContext:
    counter = request.counter
    content = request.content()
    head = [Message(role="system", content=content)] if content else []
    messages = [*head, *history.messages, *([request.query] if request.query else [])]
    ledger: dict[str, int] = {}
    if content:
        # Each section is counted once, with the separator before it; the framing and any
        # merge across a boundary go to the first section, so the ledger stays exact.
        names = [k for k in SECTION_ORDER if request.sections.get(k)]
        rest = {k: counter.count_text(SEPARATOR + request.sections[k]) for k in names[1:]}
        ledger[names[0]] = request.head_tokens() - sum(rest.values())
        ledger.update(rest)
    # The history's tokens as its view or walk counted them; summary messages apart.
    summaries = [m for m in history.messages if m.metadata.get("agentmem_summary")]
    summary = sum(counter.count_message(m) for m in summaries)
    if summaries:
        ledger["summary"] = ledger.get("summary", 0) + summary
    if len(summaries) < len(history.messages):
        ledger["recent"] = history.tokens - summary
    if request.query is not None:
        ledger["query"] = request.query_tokens
    if request.tools:
        ledger["tools"] = request.tools_tokens(_has_system(messages))
    ledger["reply_priming"] = REPLY_PRIMING_TOKENS
    return BuiltContext(
        messages=[m.to_dict() for m in messages],
        text=render_chatml(messages),
        ledger=ledger,
        token_count=sum(ledger.values()),
        max_tokens=max_tokens,
        recalled=recalled,
        omitted=omitted,
        system=content,
        history=list(history.messages),
        kept=list(history.kept),
    )


def pack_context(
    *,
    counter: TokenCounter,
    max_tokens: int,
    query: str | None,
    system_prompt: str | None,
    working_text: Callable[[int], str] | None,
    hits: Sequence[ScoredRecord],
    view_for: Callable[[int], ShortTermView] | None,
    working_share: float = 0.2,
    memory_share: float = 0.3,
) -> BuiltContext:
    """Pack the tiers into ``max_tokens``: :func:`assemble_context` of the matching blocks.

    Args:
        counter: Token counter of the target model.
        max_tokens: The budget.
        query: The user's new message, sent last (``None`` to leave it out).
        system_prompt: Instructions placed first.
        working_text: Callable ``(max_tokens) -> str`` rendering working memory, or ``None``.
        hits: Recalled long-term memories, best first.
        view_for: Callable ``(max_tokens) -> ShortTermView`` giving the short-term view.
        working_share: Most of the budget working memory may take.
        memory_share: Most of the budget recalled memories may take.

    Example:
        >>> from agentmem import TokenCounter
        >>> pack_context(counter=TokenCounter("gpt-4o"), max_tokens=50, query="hi",
        ...     system_prompt=None, working_text=None, hits=[], view_for=None).token_count
        8
    """
    blocks: list[Block] = [RecalledBlock(hits, memory_share)]
    if system_prompt:
        blocks.append(InstructionsBlock(system_prompt))
    if working_text is not None:
        blocks.append(WorkingBlock(working_text, working_share))
    if view_for is not None:
        blocks.append(ViewBlock(view_for))
    if query:
        blocks.append(QueryBlock(query))
    return assemble_context(blocks, counter=counter, max_tokens=max_tokens)
