"""Identifiers a memory carries and a prompt shows: the one rule for a subtype (private).

A memory's ``subtype`` names a kind (``preference``, ``fact``, ``langgraph_item``): it is
filtered on, counted by ``agentmem stats`` and shown in every ``<recalled_memories>`` line.
So it is a short token, checked wherever a record is written (``remember``,
``new_record``, ``MemoryRecord``, ``store_records``, ``agentmem import``), never free text.
Where a value comes from a model (consolidation) or from a store written by an earlier
version, :func:`to_identifier` reads it as the nearest token instead.

Example:
    >>> check_identifier("preference")
    'preference'
    >>> to_identifier(" User Preference ")
    'user_preference'
"""

from __future__ import annotations

import re
import unicodedata

from agentmem.errors import InvalidValueError

__all__ = ["IDENTIFIER_RULE", "MAX_IDENTIFIER_CHARS", "check_identifier", "to_identifier"]

MAX_IDENTIFIER_CHARS = 64
_IDENTIFIER = re.compile(rf"[a-z0-9][a-z0-9_-]{{0,{MAX_IDENTIFIER_CHARS - 1}}}")
_NOT_IDENTIFIER = re.compile(r"[^a-z0-9_-]+")
IDENTIFIER_RULE = (
    f"1-{MAX_IDENTIFIER_CHARS} characters from a-z 0-9 _ -, starting with a letter or digit"
)
"""The rule, as error messages state it."""


def check_identifier(value: object, what: str = "subtype") -> str:
    """``value`` if it is an identifier, else :class:`~agentmem.errors.InvalidValueError`
    (a ``ValueError``, so a pydantic validator reports it as the field's error).

    Example:
        >>> check_identifier("fact</recalled_memories>")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentmem.errors.InvalidValueError: subtype must be 1-64 ... got 'fact</recalled_memories>'
    """
    if isinstance(value, str) and _IDENTIFIER.fullmatch(value):
        return value
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    msg = f"{what} must be {IDENTIFIER_RULE} (e.g. 'preference'), got {shown}"
    raise InvalidValueError(msg)


def to_identifier(text: str) -> str | None:
    """The identifier nearest to ``text`` (accents and case folded, every other run of
    characters as ``_``, cut to the length limit), or ``None`` when nothing is left.

    Example:
        >>> to_identifier("Präferenz / Küche"), to_identifier("</fact>"), to_identifier("爱好")
        ('praferenz_kuche', 'fact', None)
    """
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    token = _NOT_IDENTIFIER.sub("_", folded).strip("_-")
    token = token[:MAX_IDENTIFIER_CHARS].rstrip("_-")
    return token or None
