"""Checks that text and JSON values can be stored (the one input boundary; public so the
adapters check their input exactly as the core does).

Every value that enters agentmem (message content and metadata, working-memory variables
and notes, memory content and metadata, session state, queries) is checked here before
anything is written:

* **text** must be encodable as UTF-8: a lone surrogate (``"\\ud800"``, left by decoding
  bytes with ``errors="surrogateescape"`` or by a broken UTF-16 pair) is refused;
* **JSON values** may nest at most :data:`MAX_JSON_DEPTH` levels of lists and dicts, hold
  only ``dict``/``list``/``tuple``/``str``/``int``/``float``/``bool``/``None``, no NaN or
  Infinity, no circular references, and no lone surrogates in keys or strings.

The walk is iterative, so a value nested 100,000 levels deep is refused in linear time
instead of raising ``RecursionError``.

Example:
    >>> from agentmem.storable import json_text, text_problem
    >>> json_text({"city": "Oslo"}, what="value")
    '{"city": "Oslo"}'
    >>> text_problem("a\\ud800b", what="content")  # doctest: +ELLIPSIS
    "content contains a lone surrogate '\\\\ud800' at index 1..."
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from agentmem.errors import InvalidValueError

__all__ = [
    "MAX_DOCUMENT_DEPTH",
    "MAX_JSON_DEPTH",
    "JsonProblem",
    "check_nonblank_text",
    "check_storable_text",
    "find_json_problem",
    "json_problem",
    "json_text",
    "text_problem",
]

MAX_JSON_DEPTH = 64
"""How many levels of nested lists and dicts a stored JSON value may have (the value itself
is level 0, so ``[[1]]`` has depth 2). Deeper values are refused with
:class:`~agentmem.errors.InvalidValueError`; real data rarely goes past ten levels."""

MAX_DOCUMENT_DEPTH = 2 * MAX_JSON_DEPTH
"""The depth limit of documents agentmem builds around values already checked against
:data:`MAX_JSON_DEPTH` (session state such as the working-memory document wraps each
variable's value a few levels down). Still far below pydantic's serializer limit (~250)
and Python's recursion limit."""

_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonProblem(NamedTuple):
    """Why a value cannot be stored as JSON.

    Attributes:
        message: What is wrong, where, and how to fix it.
        representable: ``False`` when JSON has no form for the value at all (an object of
            another type, NaN/Infinity, a circular reference); ``True`` when it is JSON data
            that still cannot be stored (a lone surrogate, nesting past the depth limit).
    """

    message: str
    representable: bool


_SCALAR_KEYS = (str, int, float, bool, type(None))


def text_problem(text: str, *, what: str) -> str | None:
    """Why ``text`` cannot be stored (it holds a lone surrogate), or ``None`` if it can."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"{what} contains a lone surrogate {found.group()!r} at index {found.start()}, which "
        "cannot be encoded as UTF-8; decode the source bytes with errors='replace' (or "
        "remove the character) before passing the text"
    )


def check_storable_text(text: str, *, what: str) -> str:
    """Return ``text``, or raise :class:`InvalidValueError` if it holds a lone surrogate.

    Example:
        >>> check_storable_text("naïve ✓", what="task")
        'naïve ✓'
    """
    problem = text_problem(text, what=what)
    if problem is not None:
        raise InvalidValueError(problem)
    return text


def check_nonblank_text(value: object, *, what: str, hint: str = "") -> str:
    """Return ``value`` if it is a string with a non-space character that can be stored
    (:func:`check_storable_text`), else raise :class:`InvalidValueError` (``hint`` is
    added to the message about blank text).

    Example:
        >>> check_nonblank_text("tabs", what="key")
        'tabs'
        >>> check_nonblank_text(" ", what="key", hint="; use a name such as 'city'")
        Traceback (most recent call last):
        ...
        agentmem.errors.InvalidValueError: key must not be empty or blank; use a name such as 'city'
    """
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {type(value).__name__}"
        raise InvalidValueError(msg)
    if not value.strip():
        msg = f"{what} must not be empty or blank{hint}"
        raise InvalidValueError(msg)
    return check_storable_text(value, what=what)


def _where(path: list[object]) -> str:
    return "".join(f"[{key!r}]" for key in path) or "the top level"


def _scalar_problem(value: object, path: list[object], what: str) -> JsonProblem | None:
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        msg = (
            f"{what} holds a string with a lone surrogate {found.group()!r} at "
            f"{_where(path)}, which cannot be encoded as UTF-8; decode the source bytes "
            "with errors='replace' (or remove the character)"
        )
        return JsonProblem(msg, representable=True)
    if isinstance(value, float) and not math.isfinite(value):
        msg = (
            f"{what} holds {value!r} at {_where(path)}; JSON has no NaN/Infinity, "
            "store None or a string instead"
        )
        return JsonProblem(msg, representable=False)
    if value is None or isinstance(value, (int, float)):  # bool is an int
        return None
    msg = (
        f"{what} is not JSON-serializable: {type(value).__name__} at {_where(path)}; "
        "convert it to str, numbers, lists and dicts"
    )
    return JsonProblem(msg, representable=False)


def _children(container: list[Any] | tuple[Any, ...] | dict[Any, Any]) -> Iterator[Any]:
    return iter(container.items() if isinstance(container, dict) else enumerate(container))


def _key_problem(container: dict[Any, Any], path: list[object], what: str) -> JsonProblem | None:
    for key in container:
        if not isinstance(key, _SCALAR_KEYS):
            msg = (
                f"{what} has a dict key of type {type(key).__name__} at {_where(path)}; "
                "JSON keys are strings, convert the key with str()"
            )
            return JsonProblem(msg, representable=False)
        if isinstance(key, str) and _SURROGATE.search(key):
            msg = (
                f"{what} has a key with a lone surrogate, {key!r:.80} at {_where(path)}, which "
                "cannot be encoded as UTF-8; decode the source bytes with errors='replace' "
                "(or remove the character)"
            )
            return JsonProblem(msg, representable=True)
        if isinstance(key, float) and not math.isfinite(key):
            msg = f"{what} has a {key!r} dict key at {_where(path)}; use a string key"
            return JsonProblem(msg, representable=False)
    return None


def json_problem(value: object, *, what: str, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``value`` cannot be stored as JSON, or ``None`` if it can (iterative walk).

    Example:
        >>> json_problem({"a": [1, 2.5, None]}, what="value") is None
        True
        >>> json_problem([float("nan")], what="value")  # doctest: +ELLIPSIS
        'value holds nan at [0]; JSON has no NaN/Infinity, ...'
    """
    problem = find_json_problem(value, what=what, max_depth=max_depth)
    return None if problem is None else problem.message


def find_json_problem(
    value: object, *, what: str, max_depth: int = MAX_JSON_DEPTH
) -> JsonProblem | None:
    """Like :func:`json_problem`, telling also whether JSON could represent the value.

    Example:
        >>> find_json_problem(["\\ud800"], what="value").representable
        True
        >>> find_json_problem([object()], what="value").representable
        False
    """
    frames: list[tuple[int, Iterator[Any]]] = []
    path: list[object] = []
    open_ids: set[int] = set()
    item: Any = value
    while True:
        if isinstance(item, (dict, list, tuple)):
            if id(item) in open_ids:
                msg = (
                    f"{what} is not JSON-serializable: it contains itself (a circular "
                    f"reference) at {_where(path)}; store a copy without the cycle"
                )
                return JsonProblem(msg, representable=False)
            if len(frames) >= max_depth:
                msg = (
                    f"{what} nests lists/dicts more than {max_depth} levels deep; flatten "
                    "it, or store the deep part as a JSON string"
                )
                return JsonProblem(msg, representable=True)
            if isinstance(item, dict):
                problem = _key_problem(item, path, what)
                if problem is not None:
                    return problem
            open_ids.add(id(item))
            frames.append((id(item), _children(item)))
            path.append(None)
        else:
            problem = _scalar_problem(item, path, what)
            if problem is not None:
                return problem
        while frames:
            step = next(frames[-1][1], None)
            if step is not None:
                path[-1], item = step
                break
            open_ids.discard(frames.pop()[0])
            path.pop()
        else:
            return None


def json_text(value: object, *, what: str, max_depth: int = MAX_JSON_DEPTH) -> str:
    """``value`` as JSON text (UTF-8 safe, ``ensure_ascii=False``), or raise.

    Raises:
        InvalidValueError: ``value`` fails :func:`json_problem` (the message names where).

    Example:
        >>> json_text([1, "två"], what="value")
        '[1, "två"]'
    """
    problem = json_problem(value, what=what, max_depth=max_depth)
    if problem is not None:
        raise InvalidValueError(problem)
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:  # e.g. an int with more than 4300 digits
        msg = f"{what} is not JSON-serializable ({exc}); convert it to str, numbers and lists"
        raise InvalidValueError(msg) from None
