"""Reading conversations into memory: JSONL chat messages and LoCoMo-style files.

* **JSONL**: one message per line, ``{"role", "content"}`` plus optional ``session_id``,
  ``name``, ``timestamp`` (ISO 8601), ``tool_calls``, ``tool_call_id``, ``metadata``. Each
  session's messages are appended to its log and consolidated into long-term memory.
* **LoCoMo** (a JSON list of samples with ``conversation.session_<n>`` turn lists and
  ``session_<n>_date_time`` dates): every turn becomes one episodic memory with the text
  ``'{speaker} said, "{text}"'`` (plus ``' and shared {blip_caption}'``), the session date as
  ``created_at`` and the turn's ``dia_id`` as provenance (``source_message_ids``). The two
  previous turns of the session are indexed with it as context (BM25 only; the content
  stays the turn itself).

Example:
    >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agentmem._util.checks import check_int
from agentmem.errors import InvalidValueError
from agentmem.types import Message

if TYPE_CHECKING:
    from agentmem.controller.manager import MemoryManager
    from agentmem.long_term.memory import LongTermMemory
    from agentmem.long_term.records import MemoryRecord

__all__ = [
    "Turn",
    "ingest_file",
    "locomo_records",
    "locomo_turns",
    "parse_session_date",
    "read_jsonl_messages",
    "store_in_batches",
    "turn_context",
    "turn_text",
]

_DATE = re.compile(
    r"^\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<ampm>am|pm)\s+on\s+"
    r"(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+),?\s+(?P<year>\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    name: n
    for n, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def parse_session_date(text: str) -> datetime:
    """Parse a LoCoMo session date (``"1:56 pm on 8 May, 2023"``) as an aware UTC datetime.

    Month names may be abbreviated to three letters; the comma is optional.

    Raises:
        ValueError: ``text`` is not in that format.
    """
    match = _DATE.match(text)
    month = None
    if match:
        name = match["month"].lower()
        month = _MONTHS.get(name) or next(
            (n for full, n in _MONTHS.items() if len(name) >= 3 and full.startswith(name)), None
        )
    if match is None or month is None:
        msg = f"unrecognized LoCoMo date {text!r}; expected e.g. '1:56 pm on 8 May, 2023'"
        raise ValueError(msg)
    hour = int(match["hour"])
    if not 1 <= hour <= 12:
        msg = f"unrecognized LoCoMo date {text!r}: hour {hour} is not on a 12-hour clock"
        raise ValueError(msg)
    hour = hour % 12 + (12 if match["ampm"].lower() == "pm" else 0)
    return datetime(
        int(match["year"]),
        month,
        int(match["day"]),
        hour,
        int(match["minute"]),
        tzinfo=timezone.utc,
    )


@dataclass(frozen=True)
class Turn:
    """One turn of a LoCoMo-style conversation."""

    dia_id: str
    speaker: str
    text: str
    session: int
    date: datetime | None
    blip_caption: str | None = None


def turn_text(turn: Turn) -> str:
    """The memory text of a turn: ``'{speaker} said, "{text}"'`` plus the image caption.

    Example:
        >>> turn_text(Turn("D1:1", "Ann", "Look!", 1, None, "a photo of a dog"))
        'Ann said, "Look!" and shared a photo of a dog'
    """
    text = f'{turn.speaker} said, "{turn.text}"'
    if turn.blip_caption:
        text += f" and shared {turn.blip_caption}"
    return text


def locomo_turns(conversation: Mapping[str, Any]) -> tuple[list[Turn], int]:
    """The turns of one LoCoMo ``conversation`` object, in session order.

    Returns the turns and how many session dates could not be parsed (those turns get
    ``date=None``).
    """
    sessions = sorted(
        (int(m[1]), key)
        for key in conversation
        if (m := _SESSION_KEY.match(key)) and isinstance(conversation[key], list)
    )
    turns: list[Turn] = []
    bad_dates = 0
    for number, key in sessions:
        date: datetime | None = None
        raw_date = conversation.get(f"{key}_date_time")
        if raw_date:
            try:
                date = parse_session_date(str(raw_date))
            except ValueError:
                bad_dates += 1
        for t in conversation[key]:
            turns.append(
                Turn(
                    dia_id=str(t["dia_id"]),
                    speaker=str(t.get("speaker", "")),
                    text=str(t.get("text", "")),
                    session=number,
                    date=date,
                    blip_caption=t.get("blip_caption") or None,
                )
            )
    return turns, bad_dates


#: Previous turns of the same session indexed with a turn (contextual indexing).
CONTEXT_TURNS = 2


def turn_context(turns: list[Turn], index: int, size: int = CONTEXT_TURNS) -> str:
    """The ``size`` turns before ``turns[index]`` in its session, as memory texts.

    A reply ("Yes, twice!") is found by the question it answers: the context is indexed
    lexically with the turn (``metadata[CONTEXT_KEY]``) but never shown as its content.

    Example:
        >>> t = [Turn("D1:1", "Ann", "Been to Paris?", 1, None),
        ...      Turn("D1:2", "Bo", "Yes, twice!", 1, None)]
        >>> turn_context(t, 1)
        'Ann said, "Been to Paris?"'
    """
    session = turns[index].session
    start = max(0, index - size)
    return "\n".join(turn_text(t) for t in turns[start:index] if t.session == session)


def locomo_records(
    memory: LongTermMemory, turns: list[Turn], *, context_turns: int = CONTEXT_TURNS
) -> list[MemoryRecord]:
    """One episodic memory per turn (see the module docstring), in ``memory``'s scope,
    indexed with the previous ``context_turns`` turns of its session as context."""
    from agentmem.long_term.memory import CONTEXT_KEY

    records = []
    for index, turn in enumerate(turns):
        fields: dict[str, Any] = {
            "subtype": "event",
            "source_message_ids": (turn.dia_id,),
            "source_session_id": f"session_{turn.session}",
        }
        if turn.date is not None:
            fields["created_at"] = turn.date
        metadata: dict[str, Any] = {
            "dia_id": turn.dia_id,
            "session": turn.session,
            "speaker": turn.speaker,
        }
        context = turn_context(turns, index, context_turns)
        if context:
            metadata[CONTEXT_KEY] = context
        if turn.date is not None:
            metadata["session_date"] = turn.date.isoformat()
        records.append(
            memory.new_record(
                turn_text(turn), "episodic", metadata=metadata, importance=0.5, **fields
            )
        )
    return records


def read_jsonl_messages(path: Path, *, default_session: str) -> dict[str, list[Message]]:
    """Messages of a JSONL file grouped by ``session_id`` (file order kept).

    Raises:
        InvalidValueError: A line is not JSON or not a valid message (its number is named).
    """
    sessions: dict[str, list[Message]] = {}
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                session = str(data.pop("session_id", default_session))
                message = Message.from_dict(data)
            except (ValueError, AttributeError, TypeError) as exc:
                msg = f"{path}:{number}: not a chat message: {exc}"
                raise InvalidValueError(msg) from None
            sessions.setdefault(session, []).append(message)
    return sessions


#: Records per ``store_records`` call in :func:`store_in_batches`.
BATCH_SIZE = 256


def store_in_batches(
    memory: LongTermMemory,
    records: Sequence[MemoryRecord],
    *,
    batch_size: int = BATCH_SIZE,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Write ``records`` with ``memory.store_records``, ``batch_size`` at a time, as fast as
    the embedding model allows; returns how many were written.

    The records are written shortest text first, so each batch holds texts of similar
    length: a model pads every text of a forward pass to the longest one, and batches cut
    from a conversation in order mix one-word replies with paragraphs (measured here:
    all-MiniLM-L6-v2 embeds LoCoMo turns about twice as fast sorted by length). Records are
    independent (ids, dates and context are set before), so the order they are written in
    changes nothing but the speed. ``progress`` gets the size of each batch written.

    Raises:
        InvalidValueError: ``batch_size`` is not a positive integer.

    Example:
        >>> store_in_batches(memory, records, progress=bar.advance)  # doctest: +SKIP
        2760
    """
    expected = "must be a positive integer"
    check_int(batch_size, "batch_size", error=InvalidValueError, expected=expected)
    ordered = sorted(records, key=lambda r: len(r.content))
    for batch in _batches(ordered, batch_size):
        memory.store_records(batch)
        if progress is not None:
            progress(len(batch))
    return len(ordered)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def ingest_file(manager: MemoryManager, path: Path, *, progress: TextIO | None = None) -> str:
    """Ingest a JSONL or LoCoMo-style file into ``manager``'s user; returns a summary line."""
    text = path.read_text(encoding="utf-8")
    head = text.lstrip()[:1]
    if head == "[":
        samples = json.loads(text)
        records = []
        for sample in samples:
            turns, _ = locomo_turns(sample.get("conversation", {}))
            records += locomo_records(manager.long_term, turns)
        total = 0

        def advance(count: int) -> None:
            nonlocal total
            total += count
            if progress is not None:
                progress.write(f"\r{total} memories")

        store_in_batches(manager.long_term, records, progress=advance)
        if progress is not None:
            progress.write("\n")
        return f"ingested {total} turns from {len(samples)} LoCoMo conversations"
    sessions = read_jsonl_messages(path, default_session=manager.session_id)
    written = 0
    for number, (session_id, messages) in enumerate(sessions.items(), 1):
        manager.short_term.store.append(session_id, messages)
        report = manager.consolidator.consolidate_session(messages, session_id=session_id)
        written += report.written
        if progress is not None:
            progress.write(f"\rsession {number}/{len(sessions)}")
    if progress is not None:
        progress.write("\n")
    count = sum(len(m) for m in sessions.values())
    return f"ingested {count} messages in {len(sessions)} sessions; {written} memories written"
