"""The one error hierarchy of agentmem.

Every error the library raises on purpose derives from :class:`AgentMemError`, and
also from the builtin it refines, so ``except ValueError`` keeps working::

    AgentMemError
    ├── ConfigurationError (ValueError)       bad option, unknown model/encoding, bad ids
    │   ├── InvalidSessionIdError             session id empty, too long or with bad characters
    │   │   └── SessionOwnershipError         the session belongs to another user (or agent)
    │   ├── DimensionMismatchError            embedder dimension differs from the collection's
    │   ├── ReadOnlySettingError (AttributeError)
    │   │                                     a setting fixed at open was assigned
    │   ├── EmbedderMismatchError             another embedding model (same dimension) made
    │   │                                     the store's vectors, or a re-embed is unfinished
    │   ├── TokenizerUnavailableError (RuntimeError)
    │   │                                     no tiktoken encoding could be loaded
    │   └── ContextBudgetError                what a prompt must send (system prompt, tools,
    │                                         query or latest message) exceeds max_tokens
    ├── InvalidMessageError (ValueError)      unknown role, non-string content, bad tool calls
    ├── InvalidValueError (ValueError)        a value a memory cannot hold (not JSON, NaN, ...)
    │   └── TurnConflictError                 a turn_id reused for a different exchange
    ├── MemoryNotFoundError (KeyError)        no memory with that id in the scope
    ├── StoreError (RuntimeError)             a message/state store failed
    │   ├── StoreClosedError                  used after close()
    │   ├── StoreCorruptedError               on-disk store damaged or not a store; names
    │                                         the path and how to recover
    │   ├── StoreLockedError                  another process holds the on-disk store
    │   ├── StoreConflictError                a concurrent writer won a compare-and-set
    │   └── StoreUnavailableError             server unreachable or too slow; says whether a
    │                                         write was not applied or its outcome is unknown
    └── LLMError (RuntimeError)               the language model failed
        ├── LLMTimeoutError (TimeoutError)
        ├── LLMConnectionError (ConnectionError)
        ├── LLMResponseError                  HTTP error status from the provider
        └── LLMOutputError (ValueError)       output malformed after the allowed retries

Example:
    >>> from agentmem.errors import AgentMemError, InvalidMessageError
    >>> issubclass(InvalidMessageError, ValueError)
    True
    >>> issubclass(InvalidMessageError, AgentMemError)
    True
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "AgentMemError",
    "BlockingCallError",
    "ConfigurationError",
    "ContextBudgetError",
    "DimensionMismatchError",
    "EmbedderMismatchError",
    "InvalidMessageError",
    "InvalidSessionIdError",
    "InvalidValueError",
    "LLMConnectionError",
    "LLMError",
    "LLMOutputError",
    "LLMResponseError",
    "LLMTimeoutError",
    "MemoryNotFoundError",
    "ReadOnlySettingError",
    "SessionOwnershipError",
    "StoreClosedError",
    "StoreConflictError",
    "StoreCorruptedError",
    "StoreError",
    "StoreLockedError",
    "StoreOutcome",
    "StoreUnavailableError",
    "TokenizerUnavailableError",
    "TurnConflictError",
]

#: What is known about the effect of a store call that failed for want of the server:
#: ``"not_applied"`` (certainly no effect) or ``"unknown"`` (a write may have been applied).
StoreOutcome = Literal["not_applied", "unknown"]


class AgentMemError(Exception):
    """Base class of every error agentmem raises on purpose."""


class ConfigurationError(AgentMemError, ValueError):
    """An option, model name or identifier is not usable."""


class InvalidSessionIdError(ConfigurationError):
    """A session (or user) id is empty, too long, or contains characters we do not allow."""


class SessionOwnershipError(InvalidSessionIdError):
    """The session belongs to another user (or agent), who has not shared it with this one.

    Its message names the session, never its owner. Nothing was read or written.
    """


class DimensionMismatchError(ConfigurationError):
    """The embedder's vector size differs from the one the collection was created with."""


class ReadOnlySettingError(ConfigurationError, AttributeError):
    """A setting that is fixed once its object is open was assigned (``service.model =
    ...``): what it configures (token counters, handles, stores) was built from it, so a
    new value would reach some handles and not others. The message says how to change it:
    open a new object with the setting, or take a copy with it changed
    (:meth:`MemoryService.with_settings <agentmem.MemoryService.with_settings>`).

    Example:
        >>> from agentmem.errors import ConfigurationError, ReadOnlySettingError
        >>> issubclass(ReadOnlySettingError, ConfigurationError), issubclass(
        ...     ReadOnlySettingError, AttributeError
        ... )
        (True, True)
    """


class EmbedderMismatchError(ConfigurationError):
    """The store's vectors were made by another embedding model than the one given, though
    of the same dimension (its vectors would fit, and silently mean nothing), or a
    re-embedding (``agentmem reembed``) was started and has not finished.

    A store records the identity of the embedder that made its vectors: the model name, the
    dimension and, for local models, a fingerprint (sha256) of the weights. A store written
    before agentmem recorded it adopts the identity of its first opener. To move a store to
    another model of the same dimension, re-embed it: ``agentmem reembed`` or
    :func:`agentmem.long_term.reembed.reembed`.

    Attributes:
        stored: The identity the store records (a dict: ``model``, ``dimension``,
            ``fingerprint``).
        given: The identity of the embedder it was opened with.
        reembedding: Whether a re-embedding to ``given`` (or another model) is unfinished.

    Example:
        >>> from agentmem.errors import EmbedderMismatchError
        >>> err = EmbedderMismatchError(
        ...     "the store's vectors were made by another model",
        ...     stored={"model": "all-MiniLM-L6-v2", "dimension": 384},
        ...     given={"model": "bge-small-en-v1.5", "dimension": 384},
        ... )
        >>> err.stored["model"], err.given["model"], err.reembedding
        ('all-MiniLM-L6-v2', 'bge-small-en-v1.5', False)
        >>> isinstance(err, ValueError)  # a ConfigurationError
        True
    """

    def __init__(
        self,
        message: str,
        *,
        stored: dict[str, object] | None = None,
        given: dict[str, object] | None = None,
        reembedding: bool = False,
    ) -> None:
        super().__init__(message)
        self.stored = stored
        self.given = given
        self.reembedding = reembedding


class TokenizerUnavailableError(ConfigurationError, RuntimeError):
    """No tiktoken encoding could be loaded (offline and no cached encoding file)."""


class ContextBudgetError(ConfigurationError):
    """What must be sent (system prompt, tool schemas, query or latest message, reply
    priming) does not fit in ``max_tokens``: raise the budget or shorten them.

    Example:
        >>> from agentmem.errors import ConfigurationError, ContextBudgetError
        >>> issubclass(ContextBudgetError, ConfigurationError)
        True
    """


class BlockingCallError(AgentMemError, RuntimeError):
    """A blocking (sync) call was made on an event loop's thread while one of that loop's
    own tasks holds the lock it needs (e.g. ``wm.set_variable`` inside ``async def`` code
    while ``await wm.aset_variable(...)`` is in flight): waiting would hang the loop
    forever, so the call fails instead. Use the async method (``a...``) there."""


class InvalidMessageError(AgentMemError, ValueError):
    """A chat message is malformed: unknown role, non-string content, bad tool calls, ..."""


class InvalidValueError(AgentMemError, ValueError):
    """A value cannot be held by a memory (not JSON-serializable, NaN, out of range, ...)."""


class TurnConflictError(InvalidValueError):
    """A ``turn_id`` was already used in the session for a different exchange.

    A ``turn_id`` makes recording a turn idempotent: recording it again with the same
    messages (a retry) stores nothing twice. Different messages under a used ``turn_id`` are
    not a retry, so they are refused and nothing is written; give the new turn its own id.
    (A ``turn_id`` whose earlier attempts all failed before storing their messages is not
    used yet: the next attempt records what it says.)
    """


class MemoryNotFoundError(AgentMemError, KeyError):
    """No memory with the given id exists in the given scope."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class StoreError(AgentMemError, RuntimeError):
    """A store (messages, session state, long-term memories) failed to read or write."""


class StoreLockedError(StoreError):
    """Another process has the on-disk store open; embedded stores allow one process."""


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class StoreCorruptedError(StoreError):
    """The on-disk store is damaged (truncated, files missing) or is not a store at all.

    Raised when the store is opened, before anything is written to it. The message names
    the path and the recovery: restore the directory or file from a backup made with
    ``agentmem export``, or move it away to start empty.

    Attributes:
        path: The damaged file or directory.

    Example:
        >>> from agentmem.errors import StoreCorruptedError, StoreError
        >>> issubclass(StoreCorruptedError, StoreError)
        True
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class StoreConflictError(StoreError):
    """A concurrent writer changed the value between our read and our write."""


class StoreUnavailableError(StoreError):
    """The store's server could not be reached, or did not answer within the time allowed.

    ``outcome`` tells what a retry has to take into account:

    * ``"not_applied"``: the call certainly changed nothing, because the connection failed
      before its request was sent, or because it was a read. Retrying is always safe.
    * ``"unknown"``: a write was sent but its reply never came back (a timeout, or the
      connection dropped): it may or may not have been applied. Retry only in a way that is
      correct either way. The session stores' writes are: an append is idempotent by message
      id, so retry it with the *same* ``Message`` objects (new ones get new ids and would be
      stored twice), and ``process_interaction(..., turn_id=...)`` can be called again with
      the same ``turn_id``; ``set_state``, ``delete_state`` and ``clear`` can simply be
      repeated.

    Attributes:
        outcome: ``"not_applied"`` or ``"unknown"`` (see above).

    Example:
        >>> from agentmem.errors import StoreUnavailableError
        >>> try:
        ...     raise StoreUnavailableError("Redis timed out", outcome="unknown")
        ... except StoreUnavailableError as exc:
        ...     exc.outcome
        'unknown'
    """

    def __init__(self, message: str, *, outcome: StoreOutcome = "unknown") -> None:
        if outcome not in get_args(StoreOutcome):
            msg = f"outcome must be one of {get_args(StoreOutcome)}, got {outcome!r}"
            raise ValueError(msg)
        super().__init__(message)
        self.outcome: StoreOutcome = outcome


class LLMError(AgentMemError, RuntimeError):
    """The language model could not produce a usable answer."""


class LLMTimeoutError(LLMError, TimeoutError):
    """The language model did not answer in time."""


class LLMConnectionError(LLMError, ConnectionError):
    """The language model endpoint could not be reached."""


class LLMResponseError(LLMError):
    """The provider answered with an error status.

    Attributes:
        status_code: The HTTP status code, when there was one.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class LLMOutputError(LLMError, ValueError):
    """The model's output stayed malformed after the allowed number of retries.

    Attributes:
        raw_output: The last output the model produced (for logs; never stored as memory).
        attempts: How many attempts were made.
    """

    def __init__(self, message: str, *, raw_output: str | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.raw_output = raw_output
        self.attempts = attempts
