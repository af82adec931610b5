"""Samples of the LoCoMo JSON schema (the file ``agentmem ingest`` and ``bench/locomo.py``
read), built from turns.

Example:
    >>> sample = locomo_sample("conv-1", [[locomo_turn("Ann", "D1:1", "Hi")]], qa=[])
    >>> sample["conversation"]["session_1_date_time"], sample["qa"]
    ('1:11 pm on 1 May, 2023', [])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["locomo_sample", "locomo_turn"]


def locomo_turn(speaker: str, dia_id: str, text: str, **extra: str) -> dict[str, str]:
    """One turn of a session (``extra``: e.g. ``blip_caption`` for a shared image)."""
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def locomo_sample(
    sample_id: str,
    sessions: Sequence[list[dict[str, str]]],
    *,
    speakers: tuple[str, str] = ("Caroline", "Melanie"),
    dates: Sequence[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One sample: a conversation of ``sessions`` (session n dated ``dates[n - 1]``, by
    default "1:(10 + n) pm on n May, 2023") and the top-level keys ``extra`` (``qa``, ...)."""
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    for n, turns in enumerate(sessions, start=1):
        date = dates[n - 1] if dates is not None else f"1:{10 + n} pm on {n} May, 2023"
        conversation[f"session_{n}_date_time"] = date
        conversation[f"session_{n}"] = turns
    return {"sample_id": sample_id, "conversation": conversation, **extra}
