"""The chat-model protocol and validated JSON completion with bounded retries.

A chat model is any object with ``complete(messages) -> str`` and
``async acomplete(messages) -> str``, where ``messages`` are OpenAI-style dicts
(``{"role": ..., "content": ...}``). Adapters: :class:`agentmem.llm.openai.OpenAIChatModel`
(any OpenAI-compatible ``base_url``); LangChain and LlamaIndex models live in their packages.

:func:`complete_json` turns a chat model into a typed extractor: it asks for one JSON object
matching a pydantic schema, pulls the object out of the reply (tolerating Markdown fences
and prose around it), validates it, and re-asks with the error when the output is invalid —
a bounded number of times — before raising :class:`~agentmem.errors.LLMOutputError`.
Malformed output is never returned, so it never reaches stored memory.

Example:
    >>> from pydantic import BaseModel
    >>> class Fact(BaseModel):
    ...     subject: str
    ...     fact: str
    >>> class Echo:  # any object with complete/acomplete is a ChatModel
    ...     def complete(self, messages):
    ...         return 'Sure! ```json\\n{"subject": "alice", "fact": "writes Python"}\\n```'
    ...     async def acomplete(self, messages):
    ...         return self.complete(messages)
    >>> complete_json(Echo(), [{"role": "user", "content": "Extract a fact."}], Fact)
    Fact(subject='alice', fact='writes Python')
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from pydantic import BaseModel, ValidationError

from agentmem._sansio import Program, adrive, call, drive
from agentmem._util.checks import check_int
from agentmem._util.executor import run_in_executor
from agentmem.errors import ConfigurationError, InvalidMessageError, LLMOutputError

__all__ = [
    "ChatModel",
    "StructuredChatModel",
    "acomplete_json",
    "complete_json",
    "complete_json_program",
]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)
ChatMessages = list[dict[str, Any]]

# Bounds that keep a retry prompt (and an error message) small whatever the model emits.
_MAX_ECHO_CHARS = 8_000
_MAX_ERROR_CHARS = 2_000
_MAX_VALIDATION_ERRORS = 10
_MAX_OBJECT_STARTS = 50
_FENCE = re.compile(r"```[ \t]*(?:[A-Za-z0-9_-]+)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


@runtime_checkable
class ChatModel(Protocol):
    """The minimal chat-model interface agentmem needs.

    ``messages`` are OpenAI-style dicts. An empty reply means the model produced nothing
    usable; callers treat it as a failure.

    Example:
        >>> class Upper:
        ...     def complete(self, messages):
        ...         return messages[-1]["content"].upper()
        ...     async def acomplete(self, messages):
        ...         return self.complete(messages)
        >>> isinstance(Upper(), ChatModel)
        True
    """

    def complete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Return the model's reply to ``messages``."""
        ...

    async def acomplete(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """Async twin of :meth:`complete`."""
        ...


@runtime_checkable
class StructuredChatModel(ChatModel, Protocol):
    """A chat model with its own validated JSON completion (e.g. provider structured outputs).

    :func:`complete_json` delegates to these methods when a model has them.
    """

    def complete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """Return the reply parsed and validated as ``schema``."""
        ...

    async def acomplete_json(
        self, messages: Sequence[Mapping[str, Any]], schema: type[ModelT], *, max_retries: int = 2
    ) -> ModelT:
        """Async twin of :meth:`complete_json`."""
        ...


def complete_json(
    llm: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    schema: type[ModelT],
    *,
    max_retries: int = 2,
) -> ModelT:
    """Ask ``llm`` for one JSON object matching ``schema`` and return it validated.

    Invalid, truncated or schema-violating output is sent back to the model with the error,
    at most ``max_retries`` times. If the model has its own ``complete_json`` (structured
    outputs), that is used instead.

    Args:
        llm: Any :class:`ChatModel`.
        messages: The conversation, as OpenAI-style dicts; a JSON instruction is added.
        schema: The pydantic model the reply must validate against (a JSON object).
        max_retries: Extra attempts after the first; ``0`` means a single attempt.

    Returns:
        An instance of ``schema``.

    Raises:
        LLMOutputError: The output was still invalid after ``max_retries + 1`` attempts
            (``raw_output`` holds the last reply, ``attempts`` the number of attempts).
        LLMError: The model itself failed (timeout, connection, HTTP status); not retried here.

    Example:
        >>> from pydantic import BaseModel
        >>> class Answer(BaseModel):
        ...     ok: bool
        >>> class SecondTry:  # cut-off JSON first; valid JSON once told what was wrong
        ...     def __init__(self):
        ...         self.replies = ['{"ok": tr', '{"ok": true}']
        ...     def complete(self, messages):
        ...         return self.replies.pop(0)
        ...     async def acomplete(self, messages):
        ...         return self.complete(messages)
        >>> complete_json(SecondTry(), [{"role": "user", "content": "ok?"}], Answer)
        Answer(ok=True)
    """
    return drive(complete_json_program(llm, messages, schema, max_retries=max_retries))


async def acomplete_json(
    llm: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    schema: type[ModelT],
    *,
    max_retries: int = 2,
) -> ModelT:
    """Async twin of :func:`complete_json` (same retries, same errors; a model without
    ``acomplete`` / ``acomplete_json`` has its sync method run in a worker thread)."""
    return await adrive(complete_json_program(llm, messages, schema, max_retries=max_retries))


def complete_json_program(
    llm: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    schema: type[ModelT],
    *,
    max_retries: int = 2,
) -> Program[ModelT]:
    """:func:`complete_json` as a program (:mod:`agentmem._sansio`), for callers that
    compose it into their own: the one implementation of the retry policy.

    The model's own ``complete_json`` / ``acomplete_json`` are used when it has
    ``complete_json``; otherwise each attempt is one ``complete`` / ``acomplete`` request.

    Example:
        >>> from agentmem._sansio import drive
        >>> from pydantic import BaseModel
        >>> class Answer(BaseModel):
        ...     ok: bool
        >>> class Yes:
        ...     def complete(self, messages):
        ...         return '{"ok": true}'
        >>> drive(complete_json_program(Yes(), [{"role": "user", "content": "?"}], Answer))
        Answer(ok=True)
    """
    _check_options(schema, max_retries)
    if _has(llm, "complete_json") or _has(llm, "acomplete_json"):
        native, anative = _faces(llm, "complete_json")
        result = yield from call(native, anative, messages, schema, max_retries=max_retries)
        return _coerce_native(result, schema)
    if not (_has(llm, "complete") or _has(llm, "acomplete")):
        _require_method(llm, "complete")
    complete, acomplete = _faces(llm, "complete")
    base = _with_json_instruction(_as_dicts(messages), schema)
    prompt = base
    attempts = max_retries + 1
    raw: object = ""
    error = ""
    for attempt in range(1, attempts + 1):
        raw = yield from call(complete, acomplete, prompt)
        if not isinstance(raw, str):
            msg = (
                f"the chat model returned {type(raw).__name__}, expected str; "
                "wrap framework models in their agentmem adapter so complete() returns text"
            )
            raise ConfigurationError(msg)
        try:
            return _parse(raw, schema)
        except _InvalidOutputError as exc:
            error = str(exc)
        logger.debug("attempt %d/%d for %s was invalid: %s", attempt, attempts, schema, error)
        prompt = [
            *base,
            {"role": "assistant", "content": _clip(raw, _MAX_ECHO_CHARS)},
            {"role": "user", "content": _retry_instruction(error)},
        ]
    noun = "attempt" if attempts == 1 else "attempts"
    msg = (
        f"the model's output did not match {schema.__name__} after {attempts} {noun}: "
        f"{error}. Raise max_retries, use a stronger model, or enable JSON mode."
    )
    raise LLMOutputError(msg, raw_output=str(raw), attempts=attempts)


def _has(llm: object, name: str) -> bool:
    return callable(getattr(llm, name, None))


def _faces(llm: object, name: str) -> tuple[Callable[..., Any], Callable[..., Awaitable[Any]]]:
    """``llm``'s sync method ``name`` and its async twin ``a<name>``. A model with only one
    of the two serves both drivers: the async face runs the sync method in a worker thread,
    and the sync face of an async-only model raises :class:`ConfigurationError` when the
    sync driver calls it."""
    sync = getattr(llm, name, None)
    asynchronous = getattr(llm, "a" + name, None)
    if not callable(sync):

        def sync(*args: Any, **kwargs: Any) -> Any:
            msg = (
                f"{type(llm).__name__} has a{name}() but no {name}(): use the async API "
                "(e.g. acomplete_json, abuild_context) with this model"
            )
            raise ConfigurationError(msg)

    if not callable(asynchronous):
        asynchronous = functools.partial(run_in_executor, sync)
    return sync, cast(Callable[..., Awaitable[Any]], asynchronous)


class _InvalidOutputError(ValueError):
    """One reply could not be used; the message is shown to the model on retry."""


def _parse(raw: str, schema: type[ModelT]) -> ModelT:
    obj = _extract_json_object(raw)
    try:
        return schema.model_validate(obj)
    except ValidationError as exc:
        raise _InvalidOutputError(_describe_validation_error(exc)) from None


def _extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: bare, inside ``` fences, or after leading prose."""
    stripped = text.strip()
    if not stripped:
        msg = "the reply was empty"
        raise _InvalidOutputError(msg)
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        pass
    else:
        if isinstance(whole, dict):
            return whole
        kind = {list: "array", str: "string", bool: "boolean"}.get(type(whole), "number")
        msg = f"expected a JSON object, got a JSON {'null' if whole is None else kind}"
        raise _InvalidOutputError(msg)
    first_error = ""
    for candidate in [m.group(1) for m in _FENCE.finditer(stripped)] + [stripped]:
        found, error = _first_object(candidate)
        if found is not None:
            return found
        first_error = first_error or error
    raise _InvalidOutputError(first_error or "no JSON object found in the reply")


def _first_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """The first decodable JSON object in ``text``, else ``(None, why)``."""
    decoder = json.JSONDecoder()
    first_error = ""
    resume = 0
    for _ in range(_MAX_OBJECT_STARTS):
        start = text.find("{", resume)
        if start < 0:
            break
        try:
            value, _end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            end = _balanced_end(text, start)
            if end is None:
                # Never fall back to a nested part of a truncated object: it could pass
                # validation while missing what the model meant to say.
                return None, first_error or (
                    f"the JSON object is incomplete (truncated output?): {exc.msg}; "
                    "raise max_tokens or ask for less"
                )
            first_error = first_error or f"invalid JSON: {exc}"
            resume = end
            continue
        if isinstance(value, dict):
            return value, ""
        resume = start + 1
    return None, first_error


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` closing the ``{`` at ``start`` (strings respected), or None."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:_MAX_VALIDATION_ERRORS]:
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    more = exc.error_count() - len(parts)
    if more > 0:
        parts.append(f"... and {more} more")
    return _clip("schema validation failed: " + "; ".join(parts), _MAX_ERROR_CHARS)


def _with_json_instruction(messages: ChatMessages, schema: type[BaseModel]) -> ChatMessages:
    schema_text = json.dumps(schema.model_json_schema(), ensure_ascii=False)
    instruction = (
        "Respond with exactly one JSON object and nothing else (no prose, no Markdown fences). "
        f"It must validate against this JSON Schema:\n{schema_text}"
    )
    first = messages[0] if messages else None
    # Merge into an existing leading system message: some chat templates reject a second one.
    if first is not None and first.get("role") == "system" and isinstance(first["content"], str):
        merged = {**first, "content": f"{first['content']}\n\n{instruction}"}
        return [merged, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def _retry_instruction(error: str) -> str:
    return (
        f"Your previous reply could not be used: {_clip(error, _MAX_ERROR_CHARS)}\n"
        "Reply again with only the corrected JSON object that matches the schema."
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " …[truncated]"


def _as_dicts(messages: Sequence[Mapping[str, Any]]) -> ChatMessages:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        msg = f"messages must be a sequence of dicts, got {type(messages).__name__}"
        raise InvalidMessageError(msg)
    out: ChatMessages = []
    for i, m in enumerate(messages):
        to_dict = getattr(m, "to_dict", None)
        if isinstance(m, Mapping):
            out.append(dict(m))
        elif callable(to_dict):  # agentmem.types.Message
            out.append(dict(to_dict()))
        else:
            msg = f"messages[{i}] must be a dict with 'role' and 'content', got {m!r}"
            raise InvalidMessageError(msg)
        if "role" not in out[-1] or "content" not in out[-1]:
            msg = f"messages[{i}] needs 'role' and 'content' keys, got {sorted(out[-1])}"
            raise InvalidMessageError(msg)
    return out


def _check_options(schema: object, max_retries: object) -> None:
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        msg = f"schema must be a pydantic BaseModel subclass, got {schema!r}"
        raise ConfigurationError(msg)
    check_int(max_retries, "max_retries", minimum=0, expected="must be an int >= 0")


def _require_method(llm: object, name: str) -> Callable[[ChatMessages], Any]:
    method = getattr(llm, name, None)
    if not callable(method):
        msg = (
            f"{type(llm).__name__} has no {name}(messages) method; pass a ChatModel "
            "(e.g. agentmem.llm.openai.OpenAIChatModel) or wrap your model in an adapter"
        )
        raise ConfigurationError(msg)
    return cast(Callable[[ChatMessages], Any], method)


def _coerce_native(result: object, schema: type[ModelT]) -> ModelT:
    if isinstance(result, schema):
        return result
    try:
        return schema.model_validate(result)
    except ValidationError as exc:
        msg = f"the model's own complete_json returned invalid data for {schema.__name__}: {exc}"
        raise LLMOutputError(msg, raw_output=repr(result)[:_MAX_ECHO_CHARS]) from exc
