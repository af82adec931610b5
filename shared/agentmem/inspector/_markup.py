"""Building HTML where every piece of text is escaped unless it is already markup (private).

A :class:`Markup` is HTML this package built; anything else that goes into :func:`tag` (a
memory's content, a user id, a query, a number) is text and is escaped, in element content
and in attribute values alike. So escaping is not a step to remember: text cannot become
markup by accident, as with a template engine's autoescape.

Prompts escape with :mod:`agentmem._util.escape` (``&``, ``<``, ``>``); HTML attribute values
also need their quotes escaped, hence :func:`html.escape` here.

Example:
    >>> str(tag("p", "a <script>", title='"x"', class_="memo"))
    '<p title="&quot;x&quot;" class="memo">a &lt;script&gt;</p>'
"""

from __future__ import annotations

import html
from collections.abc import Iterable

__all__ = ["Markup", "escape", "join", "tag"]


class Markup(str):
    """HTML built by this package: inserted as it is, never escaped again."""

    __slots__ = ()


#: HTML elements without content or closing tag.
_VOID = frozenset({"br", "hr", "input", "img", "meta", "link", "col"})
#: SVG elements written self-closed when empty (inside ``<svg>`` an unclosed ``<rect>``
#: would swallow what follows).
_SVG_LEAVES = frozenset({"rect", "line", "circle", "path", "polyline"})


def escape(value: object) -> Markup:
    """``value`` as HTML: markup as it is, anything else as escaped text (``None``: nothing).

    Example:
        >>> str(escape("<b>")), str(escape(Markup("<b>"))), str(escape(None))
        ('&lt;b&gt;', '<b>', '')
    """
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    if isinstance(value, str):
        return Markup(html.escape(value, quote=True))
    if isinstance(value, Iterable) and not isinstance(value, bytes):
        return join(value)
    return Markup(html.escape(str(value), quote=True))


def join(children: Iterable[object], separator: str = "") -> Markup:
    """The children, each escaped as :func:`escape` does, one after the other."""
    return Markup(Markup(separator).join(escape(child) for child in children))


def tag(name: str, /, *children: object, **attrs: object) -> Markup:
    """The element ``name`` with ``attrs`` (escaped; ``class_`` is ``class``, ``_`` in
    names becomes ``-``; ``None`` and ``False`` leave the attribute out, ``True`` writes
    it bare) around ``children`` (escaped unless they are :class:`Markup`).

    Example:
        >>> str(tag("input", type="checkbox", checked=True, disabled=False))
        '<input type="checkbox" checked>'
    """
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        parts.append(attr if value is True else f'{attr}="{escape(value)}"')
    opening = f"<{' '.join(parts)}>"
    if name in _VOID and not children:
        return Markup(opening)
    if name in _SVG_LEAVES and not children:
        return Markup(f"<{' '.join(parts)}/>")
    return Markup(f"{opening}{join(children)}</{name}>")
