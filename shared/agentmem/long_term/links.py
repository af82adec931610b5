"""Entity links between memories, made at write time without a model.

Each memory written with linking on (:class:`~agentmem.long_term.expansion.ExpansionConfig`
``link=True``) carries the entities its text mentions as :class:`Relation` edges
``mentions -> entity:<key>``, so two memories that name the same person, place, object or
date share a target in the indexed ``related_concepts`` payload field. Search can then hop
from a good hit to the memories linked to it (:mod:`agentmem.long_term.expansion`) with
one payload-filtered read per hop, on every backend, and the links survive a reopen like
any other payload.

Extraction is deterministic and cheap (a few regular expressions):

* **names**: capitalized words (``Caroline``, ``LGBTQ``), and runs of them as one more key
  (``New York``), except a short list of function words that start sentences;
* **things**: lower-case words of four letters or more outside a stop list, with a light
  plural folding (``paintings`` -> ``painting``); which of them matter is decided at search
  time by how rare they are (IDF), so no part-of-speech model is needed;
* **years** (``2022``) and the **dates** the text names (``on 13 October`` ->
  ``2023-10``), read with :func:`agentmem.long_term.temporal.query_windows` relative to
  the memory's own date.

A memory about a concept (``concept`` set, :class:`~agentmem.long_term.SemanticMemory`)
keeps its relations as they are: its edges are the concept graph's, not mentions.

Example:
    >>> from datetime import datetime, timezone
    >>> entity_keys('Caroline said, "I went to the LGBTQ support group in New York!"')
    ['caroline', 'lgbtq', 'support', 'group', 'new', 'york', 'new york']
    >>> entity_keys("We met on 13 October", when=datetime(2023, 11, 2, tzinfo=timezone.utc))
    ['2023-10']
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from datetime import datetime

from agentmem.long_term.records import MemoryRecord, Relation
from agentmem.long_term.temporal import query_windows

__all__ = [
    "ENTITY_PREFIX",
    "MAX_ENTITIES",
    "MENTIONS",
    "entities_of",
    "entity_keys",
    "link_record",
    "link_records",
]

#: Predicate of an entity link.
MENTIONS = "mentions"
#: Prefix of an entity link's target, so entities never mix with a user's concept names.
ENTITY_PREFIX = "entity:"
#: At most this many entities per memory (the first ones in the text).
MAX_ENTITIES = 32

_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*[A-Za-z]|[A-Za-z]|\d{4}")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
# Function words and fillers: capitalized at a sentence start, never entities; lower-case,
# too common to link anything. Rarer common words are left to IDF at search time.
_STOP_WORDS = """
a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each even
ever few for from further had has have having he her here hers herself him himself his
how i if in into is it its itself just let like made make many maybe me more most much
my myself no nor not now of off oh ok okay on once only or other our ours ourselves out
over own really same she should so some such than that the their theirs them themselves
then there these they this those through to too under until up very was we well were
what when where which while who whom why will with would yeah yes you your yours
yourself yourselves hey hi hello thanks thank wow awesome great cool sure said says say
tell told know think thought thing things something anything everything nothing someone
everyone always never still though although yet just got get gets getting going gone
went come came coming want wanted wants need needs feel feels felt good glad nice love
loved lovely amazing definitely totally absolutely
"""
_STOP = frozenset(_STOP_WORDS.split()) | {
    name.lower() for name in (*calendar.month_name, *calendar.day_name) if name
}


def _fold(word: str) -> str:
    """Lower-case, drop a possessive and fold a regular plural."""
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    word = word.strip("'-")
    if "'" in word:  # a contraction (I'm, don't): never an entity
        return ""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def entity_keys(text: str, *, when: datetime | None = None) -> list[str]:
    """The entities ``text`` mentions, as normalized keys, in order of first mention.

    Args:
        text: The memory's text.
        when: The memory's date: dates the text names without a year are read relative
            to it (``"on 13 October"`` said in November 2023 is ``2023-10``). Without it,
            only dates with a year are kept.

    Returns:
        At most :data:`MAX_ENTITIES` distinct keys: names and things lower-cased (runs of
        capitalized words also joined, ``"new york"``), years (``"2022"``) and named
        months (``"2023-10"``).
    """
    keys: dict[str, None] = {}
    run: list[str] = []

    def close_run() -> None:
        if len(run) > 1:
            keys[" ".join(run)] = None
        run.clear()

    for match in _WORD.finditer(text):
        word = match.group()
        if _YEAR.match(word):
            close_run()
            keys[word] = None
            continue
        if word.isdigit():
            close_run()
            continue
        folded = _fold(word)
        if not folded or folded in _STOP:
            close_run()
            continue
        if word[0].isupper():
            keys[folded] = None
            run.append(folded)
            continue
        close_run()
        if len(folded) >= 4:
            keys[folded] = None
    close_run()
    if when is not None:
        # A date without a year gives two windows (the last two occurrences): keep the
        # latest of each month up to ``when``.
        latest: dict[int, datetime] = {}
        for start, _ in query_windows(text, when):
            if start <= when and (start.month not in latest or start > latest[start.month]):
                latest[start.month] = start
        for start in sorted(latest.values()):
            keys[f"{start.year:04d}-{start.month:02d}"] = None
    return list(keys)[:MAX_ENTITIES]


def link_record(record: MemoryRecord) -> MemoryRecord:
    """``record`` with its entity links (see the module docstring); a memory about a
    concept, or one already linked, is returned unchanged.

    Example:
        >>> from agentmem.long_term.records import Scope
        >>> r = MemoryRecord.new("Melanie painted a sunrise", "episodic", scope=Scope(user_id="u"))
        >>> entities_of(link_record(r))
        ('melanie', 'painted', 'sunrise')
    """
    if record.concept is not None or entities_of(record):
        return record
    keys = entity_keys(record.content, when=record.created_at)
    if not keys:
        return record
    edges = tuple(Relation(predicate=MENTIONS, target=ENTITY_PREFIX + k) for k in keys)
    return record.model_copy(update={"relations": (*record.relations, *edges)})


def link_records(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """:func:`link_record` of each record, in order."""
    return [link_record(r) for r in records]


def entities_of(record: MemoryRecord) -> tuple[str, ...]:
    """The entity keys a linked record mentions (without :data:`ENTITY_PREFIX`)."""
    return tuple(
        rel.target.removeprefix(ENTITY_PREFIX)
        for rel in record.relations
        if rel.predicate == MENTIONS and rel.target.startswith(ENTITY_PREFIX)
    )
