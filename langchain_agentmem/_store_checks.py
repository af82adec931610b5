"""Input checks of LangGraph store operations (private): one call per op, before any runs.

Every label, key, query, filter and value of an operation must be storable: text without
lone surrogates (which cannot be encoded as UTF-8, nor hashed into an id), and JSON values
nested at most :data:`agentmem.storable.MAX_JSON_DEPTH` levels (checked iteratively, so a
value 5,000 levels deep is refused instead of raising ``RecursionError``): else
:class:`~agentmem.errors.InvalidValueError`. Paging arguments must be integers: ``limit``
and ``offset`` >= 0, ``max_depth`` ``None`` or >= 1 (a negative ``limit`` would otherwise
slice from the end, and a negative ``max_depth`` cut labels off the end): else
:class:`~agentmem.errors.ConfigurationError`. A refused op raises before anything is read
or written.

Example:
    >>> from langgraph.store.base import PutOp
    >>> check_op(PutOp(("alice", "prefs"), "indent", {"text": "tabs"}))
    >>> check_op(PutOp(("alice",), "k", {"v": "\\ud800"}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentmem.errors.InvalidValueError: store value holds a string with a lone surrogate ...
    >>> check_op(SearchOp(("alice",), limit=-1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentmem.errors.ConfigurationError: search limit must be an integer >= 0, got -1; ...
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp

from agentmem.errors import InvalidValueError
from agentmem.integration import (
    check_non_negative_int,
    check_positive_int,
    check_storable_text,
    find_json_problem,
    json_text,
)

__all__ = ["check_op"]


def _labels(labels: Sequence[object], what: str) -> None:
    for index, label in enumerate(labels):
        if isinstance(label, str):
            check_storable_text(label, what=f"{what} label {index}")


def _paging(op: SearchOp | ListNamespacesOp, what: str) -> None:
    hint = "; it is the most items to return, e.g. limit=10"
    check_non_negative_int(op.limit, f"{what} limit", hint=hint)
    hint = "; it is how many items to skip, e.g. offset=0"
    check_non_negative_int(op.offset, f"{what} offset", hint=hint)


def check_op(op: Op) -> None:
    """Raise :class:`~agentmem.errors.InvalidValueError` if ``op`` holds unstorable input,
    :class:`~agentmem.errors.ConfigurationError` if its paging arguments are not usable.

    Other types are left to the store's own checks; this one refuses what would otherwise
    fail deep inside with ``UnicodeEncodeError`` or ``RecursionError``, or page wrongly.
    """
    if isinstance(op, (GetOp, PutOp)):
        _labels(op.namespace, "namespace")
        if isinstance(op.key, str):
            check_storable_text(op.key, what="store key")
    if isinstance(op, PutOp) and op.value is not None:
        json_text(op.value, what="store value")
    elif isinstance(op, SearchOp):
        _paging(op, "search")
        _labels(op.namespace_prefix, "namespace prefix")
        if isinstance(op.query, str):
            check_storable_text(op.query, what="search query")
        problem = find_json_problem(op.filter, what="search filter")
        if problem is not None and problem.representable:  # the rest: matched as given
            raise InvalidValueError(problem.message)
    elif isinstance(op, ListNamespacesOp):
        _paging(op, "list_namespaces")
        if op.max_depth is not None:
            hint = "; pass None for whole namespaces"
            check_positive_int(op.max_depth, "list_namespaces max_depth", hint=hint)
        for condition in op.match_conditions or ():
            _labels(condition.path, "match condition")
