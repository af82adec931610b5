"""How a model reads the tags of a prompt: the tests' own reading, independent of agentmem's.

A model does not parse XML. It reads ``< /recalled_memories >``, ``</RECALLED_MEMORIES>``,
``＜／recalled_memories＞`` or ``〈/recalled_memories〉`` as the end of a block as readily as
``</recalled_memories>``. So a tag here is any character that draws as an angle bracket,
optional spaces and slash (ASCII or a look-alike), a name, spaces and a bracket again; and
the characters that draw as an angle bracket are derived from Unicode's own data
(:func:`brackets`), not taken from agentmem's escaping table.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

__all__ = ["assert_tags", "brackets", "tag_pattern", "tags_read"]

_BRACKET_NAMES = re.compile(
    r"ANGLE BRACKET|ANGLE QUOTATION MARK|LESS-THAN SIGN|GREATER-THAN SIGN|POINTING ANGLE"
)
# Unicode's confusables (UTS #39) for "<" and ">": letters that draw as one.
_CONFUSABLES = (
    "\u02c2\u02c3\u1438\u1433\u16b2\u2039\u203a\u276e\u276f\U00016f3f\U0001d236\U0001d237"
)
_SLASHES = "/\uff0f\u2215\u2044\u29f8"  # / ／ ∕ ⁄ ⧸


@functools.cache
def brackets() -> frozenset[str]:
    """Every character that draws as an angle bracket: ``<``, ``>``, those whose
    compatibility decomposition holds one, those Unicode names an angle bracket, angle
    quotation mark or less/greater-than sign, and the confusables of ``<`` and ``>``."""
    found = set("<>" + _CONFUSABLES)
    for cp in range(0x80, sys.maxunicode + 1):
        char = chr(cp)
        name = unicodedata.name(char, "")
        if not name or unicodedata.combining(char):
            continue
        if _BRACKET_NAMES.search(name) or any(
            c in unicodedata.normalize("NFKD", char) for c in "<>"
        ):
            found.add(char)
    return frozenset(found)


@functools.cache
def tag_pattern() -> re.Pattern[str]:
    """A tag as a model reads it (case and spacing ignored, any bracket, any slash)."""
    bracket = "[" + re.escape("".join(sorted(brackets()))) + "]"
    space = r"[\s\u200b\u200c\u200d\u2060\ufeff]*"
    slash = "[" + re.escape(_SLASHES) + "]?"
    return re.compile(f"{bracket}{space}{slash}{space}[^\\W\\d][\\w-]*{space}{bracket}")


def tags_read(text: str) -> list[str]:
    """The tags a model reads in ``text``, in order."""
    return [m.group() for m in tag_pattern().finditer(text)]


def assert_tags(text: str, expected: list[str]) -> None:
    """A model reading ``text`` finds exactly the tags ``expected``, in order, and no
    angle bracket (or look-alike) outside them: no value opened or closed a block."""
    assert tags_read(text) == expected, text
    stray = set(tag_pattern().sub("", text)) & brackets()
    assert not stray, (sorted(stray), text)
