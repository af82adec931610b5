"""Text shown to people, cut to fit a line without cutting a word in two (private).

Example:
    >>> shorten("I only write Python, and I indent with tabs", 25)
    'I only write Python, and…'
"""

from __future__ import annotations

import unicodedata

__all__ = ["shorten"]

ELLIPSIS = "…"


def _wide(char: str) -> bool:
    """Chinese, Japanese and Korean characters: a line may break between any two."""
    return unicodedata.east_asian_width(char) in ("W", "F")


def _in_one_word(before: str, after: str) -> bool:
    """Whether a cut between ``before`` and ``after`` would split a word."""
    joined = (before.isalnum() or before in "'’_-") and (after.isalnum() or after in "'’_-")
    return joined and not (_wide(before) or _wide(after))


def shorten(text: str, width: int) -> str:
    """``text`` on one line (whitespace runs collapsed), at most ``width`` characters: when
    it is longer, cut at the last word boundary that fits and end with ``…``. Only a single
    word longer than the whole width is cut inside (there is no boundary to cut at).

    Example:
        >>> shorten("user: Hi!\\n  assistant: Noted: Python, tabs.", 32)
        'user: Hi! assistant: Noted:…'
        >>> shorten("我也会说一点中文，请用简短的句子回答中文问题。", 10)
        '我也会说一点中文，…'
        >>> shorten("short", 10)
        'short'
    """
    if width < 1:
        msg = f"width must be at least 1, got {width!r}"
        raise ValueError(msg)
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    end = width - len(ELLIPSIS)
    while end > 0 and _in_one_word(flat[end - 1], flat[end]):
        end -= 1
    if end == 0:  # one word longer than the width
        end = width - len(ELLIPSIS)
    return flat[:end].rstrip() + ELLIPSIS
