"""Input checks of LangGraph store operations (private): one call before an op runs.

Every label, key, query, filter and value of an operation must be storable: text without
lone surrogates (which cannot be encoded as UTF-8, nor hashed into an id), and JSON values
nested at most :data:`agentmem.storable.MAX_JSON_DEPTH` levels (checked iteratively, so a
value 5,000 levels deep is refused instead of raising ``RecursionError``). A refused op
raises :class:`~agentmem.errors.InvalidValueError` before anything is read or written.

Example:
    >>> from langgraph.store.base import PutOp
    >>> check_op(PutOp(("alice", "prefs"), "indent", {"text": "tabs"}))
    >>> check_op(PutOp(("alice",), "k", {"v": "\\ud800"}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentmem.errors.InvalidValueError: store value holds a string with a lone surrogate ...
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp

from agentmem.errors import InvalidValueError
from agentmem.storable import check_storable_text, find_json_problem, json_text

__all__ = ["check_op"]


def _labels(labels: Sequence[object], what: str) -> None:
    for index, label in enumerate(labels):
        if isinstance(label, str):
            check_storable_text(label, what=f"{what} label {index}")


def check_op(op: Op) -> None:
    """Raise :class:`~agentmem.errors.InvalidValueError` if ``op`` holds unstorable input.

    Types are left to the store's own checks; this one refuses only what would otherwise
    fail deep inside with ``UnicodeEncodeError`` or ``RecursionError``.
    """
    if isinstance(op, (GetOp, PutOp)):
        _labels(op.namespace, "namespace")
        if isinstance(op.key, str):
            check_storable_text(op.key, what="store key")
    if isinstance(op, PutOp) and op.value is not None:
        json_text(op.value, what="store value")
    elif isinstance(op, SearchOp):
        _labels(op.namespace_prefix, "namespace prefix")
        if isinstance(op.query, str):
            check_storable_text(op.query, what="search query")
        problem = find_json_problem(op.filter, what="search filter")
        if problem is not None and problem.representable:  # the rest: matched as given
            raise InvalidValueError(problem.message)
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _labels(condition.path, "match condition")
