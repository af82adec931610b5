"""Input checks for working memory (private). Each returns the normalized value or raises."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from agentmem._util.checks import check_optional_int, check_positive_int
from agentmem.errors import ConfigurationError, InvalidValueError
from agentmem.storable import check_nonblank_text, json_text
from agentmem.working.models import TASK_STATUSES

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "MAX_KEY_LENGTH",
    "TASK_TEXT_KEYS",
    "check_clock_value",
    "check_confidence",
    "check_evidence",
    "check_key",
    "check_max_tokens",
    "check_positive_int",
    "check_status",
    "check_task",
    "check_text",
    "check_ttl",
    "check_ttl_turns",
    "description_key",
    "normalize_value",
]

DEFAULT_MAX_VALUE_BYTES = 64 * 1024
MAX_KEY_LENGTH = 256
TASK_TEXT_KEYS = ("description", "name", "title", "task", "goal")
"""Keys of a task dict that can give its description; the first one present is used."""


def check_max_tokens(max_tokens: object) -> int | None:
    """A rendering budget: ``None`` or an ``int`` >= 0, else :class:`ConfigurationError`."""
    return check_optional_int(
        max_tokens, "max_tokens", minimum=0, expected="must be None or an integer >= 0"
    )


def check_clock_value(value: object) -> datetime:
    """What the injected clock returned must be a timezone-aware ``datetime``."""
    if not isinstance(value, datetime):
        msg = f"clock() must return a datetime, got {type(value).__name__}"
        raise ConfigurationError(msg)
    if value.tzinfo is None or value.utcoffset() is None:
        msg = (
            f"clock() returned a naive datetime {value!r}; return a timezone-aware one, "
            "for example datetime.now(timezone.utc)"
        )
        raise ConfigurationError(msg)
    return value


def check_key(key: object, what: str = "variable key", example: str = "user_city") -> str:
    """A variable key (or another name, as ``what``): a non-blank string of at most 256
    characters without control characters."""
    key = check_nonblank_text(key, what=what, hint=f"; use a name such as {example!r}")
    if len(key) > MAX_KEY_LENGTH:
        msg = f"{what} is {len(key)} characters long; the limit is {MAX_KEY_LENGTH}"
        raise InvalidValueError(msg)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        msg = f"{what} {key!r} contains control characters (newline, tab, ...); remove them"
        raise InvalidValueError(msg)
    return key


def normalize_value(key: str, value: object, max_bytes: int) -> Any:
    """The JSON round trip of ``value``, refusing non-JSON values, NaN/Infinity, lone
    surrogates, nesting deeper than ``MAX_JSON_DEPTH`` (64) and huge values."""
    text = json_text(value, what=f"value for variable {key!r}")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        msg = (
            f"value for variable {key!r} is {size:,} bytes as JSON; the limit is {max_bytes:,} "
            "(max_value_bytes); keep large data elsewhere and store a reference to it"
        )
        raise InvalidValueError(msg)
    return json.loads(text)


def check_task(task: object, max_bytes: int) -> tuple[str, dict[str, Any], str | None]:
    """A task as text or as a dict: its description, its fields and the status it carries.

    A dict keeps every field (JSON values, as their round trip) except ``status``, which is
    returned apart; its description is the first of :data:`TASK_TEXT_KEYS` it has.
    """
    if isinstance(task, str):
        return check_text(task, "task description", max_bytes), {}, None
    if not isinstance(task, Mapping):
        msg = (
            f"task must be a string or a dict such as {{'name': ..., 'goal': ...}}, "
            f"got {type(task).__name__}"
        )
        raise InvalidValueError(msg)
    for key in task:
        check_key(key, "task field name", "goal")
    text = json_text(dict(task), what="task")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        msg = f"task is {size:,} bytes as JSON; the limit is {max_bytes:,} (max_value_bytes)"
        raise InvalidValueError(msg)
    fields: dict[str, Any] = json.loads(text)
    status = fields.pop("status", None)
    checked_status = None if status is None else check_status(status)
    key = next((k for k in TASK_TEXT_KEYS if k in fields), None)
    if key is None:
        msg = (
            f"task dict has no description: give one of {', '.join(map(repr, TASK_TEXT_KEYS))} "
            f"(got fields {sorted(fields)!r}), e.g. {{'name': 'book flight', 'goal': '...'}}"
        )
        raise InvalidValueError(msg)
    description = check_text(fields[key], f"task field {key!r}", max_bytes)
    return description, fields, checked_status


def description_key(fields: Mapping[str, Any]) -> str | None:
    """Which field of a task dict gave its description (``None`` for a text task)."""
    return next((k for k in TASK_TEXT_KEYS if k in fields), None)


def check_text(text: object, what: str, max_bytes: int) -> str:
    """Non-blank text of at most ``max_bytes`` UTF-8 bytes."""
    text = check_nonblank_text(text, what=what)
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        msg = f"{what} is {size:,} bytes; the limit is {max_bytes:,} (max_value_bytes)"
        raise InvalidValueError(msg)
    return text


def check_ttl(ttl: object) -> timedelta | None:
    """``None``, or a positive finite number of seconds or ``timedelta``."""
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        if ttl <= timedelta(0):
            msg = f"ttl must be positive, got {ttl!r}; pass None for no expiry"
            raise InvalidValueError(msg)
        return ttl
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        msg = f"ttl must be seconds (int or float) or a timedelta, got {type(ttl).__name__}"
        raise InvalidValueError(msg)
    if not math.isfinite(ttl) or ttl <= 0:
        msg = f"ttl must be a positive finite number of seconds, got {ttl!r}"
        raise InvalidValueError(msg)
    try:
        return timedelta(seconds=ttl)
    except OverflowError:
        msg = f"ttl of {ttl!r} seconds is too large; pass None for no expiry"
        raise InvalidValueError(msg) from None


def check_ttl_turns(ttl_turns: object) -> int | None:
    """``None`` or an ``int`` >= 1."""
    expected = "must be an integer >= 1 (turns until expiry)"
    return check_optional_int(ttl_turns, "ttl_turns", error=InvalidValueError, expected=expected)


def check_confidence(confidence: object) -> float:
    """A finite number in [0, 1]."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        msg = f"confidence must be a number in [0, 1], got {type(confidence).__name__}"
        raise InvalidValueError(msg)
    if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        msg = f"confidence must be a finite number in [0, 1], got {confidence!r}"
        raise InvalidValueError(msg)
    return float(confidence)


def check_evidence(evidence: object, max_bytes: int) -> tuple[str, ...]:
    """A sequence of non-blank strings (a bare string is refused: wrap it in a list)."""
    if isinstance(evidence, str) or not isinstance(evidence, Sequence):
        msg = (
            f"evidence must be a list of strings, got {type(evidence).__name__}; "
            "wrap a single observation in a list"
        )
        raise InvalidValueError(msg)
    return tuple(check_text(item, "evidence item", max_bytes) for item in evidence)


def check_status(status: object) -> str:
    """One of the task statuses."""
    if status not in TASK_STATUSES:
        msg = f"unknown task status {status!r}; expected one of {', '.join(TASK_STATUSES)}"
        raise InvalidValueError(msg)
    return str(status)
