"""Value filters and namespace match conditions of LangGraph stores (private helpers).

Semantics follow LangGraph's reference ``InMemoryStore``: a filter is a dict of exact
matches (nested dicts match nested values) or operator dicts (``$eq $ne $gt $gte $lt
$lte``); in namespace match conditions, a ``"*"`` label of the *condition* is a wildcard,
while stored labels are always compared literally.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import MatchCondition

from agentmem.errors import InvalidValueError

__all__ = ["matches_filter", "matches_namespace"]

_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def matches_filter(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item value satisfies a LangGraph search filter."""
    if not flt:
        return True
    return all(_compare(value.get(key), expected) for key, expected in flt.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_apply(actual, op, arg) for op, arg in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected, strict=False))
        )
    return bool(actual == expected)


def _apply(actual: Any, operator: str, arg: Any) -> bool:
    if operator not in _OPERATORS:
        msg = f"unsupported filter operator {operator!r}; use one of {sorted(_OPERATORS)}"
        raise InvalidValueError(msg)
    if operator == "$eq":
        return bool(actual == arg)
    if operator == "$ne":
        return bool(actual != arg)
    if actual is None or isinstance(actual, bool):
        return False
    try:
        left, right = float(actual), float(arg)
    except (TypeError, ValueError):
        return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def matches_namespace(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` satisfies a prefix/suffix match condition."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        msg = f"unsupported match type {condition.match_type!r}; use 'prefix' or 'suffix'"
        raise InvalidValueError(msg)
    return all(p == "*" or n == p for n, p in pairs)
