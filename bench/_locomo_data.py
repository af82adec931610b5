"""Loading LoCoMo-format files: turns, questions, session dates and evidence clean-up.

The schema is that of LoCoMo's public ``data/locomo10.json``, whose few malformed evidence
ids are cleaned up: evidence strings are split on ``;`` and whitespace, ``'D:'`` becomes
``'D'``, leading zeros are stripped from both numbers, and ids that carry no turn (the bare
``'D'``) or point to a turn that does not exist are dropped. Every change is counted in
:class:`CleanupStats`.

Example:
    >>> clean_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"], {"D8:6", "D9:17", "D11:26"})
    (('D8:6', 'D9:17', 'D11:26'), {'split': 1, 'fixed_prefix': 1, 'fixed_zeros': 1, \
'dropped_malformed': 1, 'dropped_missing': 1, 'duplicates': 0})
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmem.ingest import Turn, locomo_turns, parse_session_date, turn_text

__all__ = [
    "CleanupStats",
    "Conversation",
    "Question",
    "Turn",
    "clean_evidence",
    "load_locomo",
    "parse_session_date",
    "scope_id",
    "turn_text",
]

_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_BAD_SCOPE_CHARS = re.compile(r"[^A-Za-z0-9_.:@-]")


def scope_id(sample_id: str) -> str:
    """A user id for a conversation: characters outside ``A-Z a-z 0-9 _ . : @ -`` become ``_``.

    Example:
        >>> scope_id("conv 26/a")
        'conv_26_a'
    """
    return _BAD_SCOPE_CHARS.sub("_", sample_id)[:256] or "_"


@dataclass(frozen=True)
class Question:
    """One QA pair; ``evidence`` holds the cleaned dia_ids (possibly empty)."""

    index: int
    question: str
    category: int
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One sample: its turns in order and its questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass
class CleanupStats:
    """What loading changed or dropped (counts over the whole file)."""

    questions: int = 0
    questions_no_evidence: int = 0
    questions_emptied: int = 0
    evidence_raw: int = 0
    evidence_clean: int = 0
    changes: Counter[str] = field(default_factory=Counter)
    categories: Counter[int] = field(default_factory=Counter)
    bad_dates: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "questions": self.questions,
            "questions_without_evidence": self.questions_no_evidence,
            "questions_emptied_by_cleanup": self.questions_emptied,
            "evidence_strings": self.evidence_raw,
            "evidence_ids_after_cleanup": self.evidence_clean,
            **{f"evidence_{k}": v for k, v in sorted(self.changes.items())},
            "questions_per_category": {str(k): v for k, v in sorted(self.categories.items())},
            "unparsed_session_dates": self.bad_dates,
        }


def clean_evidence(
    raw: Iterable[str], known: Collection[str]
) -> tuple[tuple[str, ...], dict[str, int]]:
    """Clean one question's evidence list against the turn ids that exist.

    Returns:
        The cleaned, de-duplicated ids in order, and counts of each change: ``split``
        (strings holding several ids), ``fixed_prefix`` (``'D:'``), ``fixed_zeros``
        (zero-padded numbers), ``dropped_malformed`` (no id, e.g. ``'D'``),
        ``dropped_missing`` (no such turn) and ``duplicates``.
    """
    counts = dict.fromkeys(
        (
            "split",
            "fixed_prefix",
            "fixed_zeros",
            "dropped_malformed",
            "dropped_missing",
            "duplicates",
        ),
        0,
    )
    out: list[str] = []
    for item in raw:
        parts = [p for p in re.split(r"[;\s]+", str(item)) if p]
        if len(parts) > 1:
            counts["split"] += 1
        for part in parts:
            token = part
            if token.startswith("D:"):
                token = "D" + token[2:]
                counts["fixed_prefix"] += 1
            match = _DIA_ID.match(token)
            if match is None:
                counts["dropped_malformed"] += 1
                continue
            canonical = f"D{int(match[1])}:{int(match[2])}"
            if canonical != token:
                counts["fixed_zeros"] += 1
            if canonical not in known:
                counts["dropped_missing"] += 1
            elif canonical in out:
                counts["duplicates"] += 1
            else:
                out.append(canonical)
    return tuple(out), counts


def load_locomo(path: str | Path) -> tuple[list[Conversation], CleanupStats]:
    """Load a LoCoMo-format JSON file (a list of samples) with evidence cleaned up.

    Raises:
        ValueError: The file is not a list of samples with ``conversation`` and ``qa``.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(
        isinstance(s, dict) and "conversation" in s and "qa" in s for s in data
    ):
        msg = f"{path}: expected a JSON list of samples with 'conversation' and 'qa' keys"
        raise ValueError(msg)
    stats = CleanupStats()
    conversations: list[Conversation] = []
    for n, sample in enumerate(data):
        turns, bad_dates = locomo_turns(sample["conversation"])
        stats.bad_dates += bad_dates
        known = {t.dia_id for t in turns}
        questions: list[Question] = []
        for i, qa in enumerate(sample["qa"]):
            raw = tuple(str(e) for e in qa.get("evidence") or ())
            evidence, counts = clean_evidence(raw, known)
            stats.questions += 1
            stats.evidence_raw += len(raw)
            stats.evidence_clean += len(evidence)
            stats.changes.update({k: v for k, v in counts.items() if v})
            if not raw:
                stats.questions_no_evidence += 1
            elif not evidence:
                stats.questions_emptied += 1
            category = int(qa.get("category", 0))
            stats.categories[category] += 1
            questions.append(
                Question(
                    index=i,
                    question=str(qa["question"]),
                    category=category,
                    evidence=evidence,
                    raw_evidence=raw,
                )
            )
        sample_id = str(sample.get("sample_id") or f"sample-{n}")
        conversations.append(Conversation(sample_id, tuple(turns), tuple(questions)))
    return conversations, stats
