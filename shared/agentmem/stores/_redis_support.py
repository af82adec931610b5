"""Key names, Lua scripts, retries and error mapping of the Redis session store (private helper).

Every key of one session carries the session id as a Redis Cluster hash tag,
``{prefix}:{<session_id>}:<part>``, so the scripts below touch a single slot and run
atomically on a cluster node as well as on a single server. The one key outside a
session's slot, the session index, is only ever written in its own command (pipelined next
to a script, which a cluster pipeline sends to each key's node), never in a script.

**Bounded calls.** :func:`store_errors` wraps each store call in a *call context* (a context
variable, so it follows the call into redis-py in the same thread or asyncio task). It holds
the call's deadline, which :class:`DeadlineRetry` and :class:`AsyncDeadlineRetry` respect in
every retry loop redis-py runs for the call (connect, health check, command), and a *sent*
flag that the connection classes installed by :func:`track_sends` raise just before one of
the call's commands goes out. A failed write whose flag is still down was certainly not
applied; otherwise its outcome is unknown.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import math
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias, TypeVar

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.connection
import redis.asyncio.retry
import redis.cluster
import redis.connection
from pydantic import ValidationError
from redis.backoff import AbstractBackoff
from redis.exceptions import (
    AskError,
    ClusterDownError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry

from agentmem._sansio import Program, Request, adrive, call, drive
from agentmem.errors import StoreError, StoreOutcome, StoreUnavailableError
from agentmem.stores.base import StoredMessage
from agentmem.types import Message

__all__ = [
    "APPEND",
    "OWNER",
    "STATE",
    "UNAVAILABLE",
    "AsyncDeadlineRetry",
    "DeadlineRetry",
    "LuaScript",
    "Op",
    "SessionKeys",
    "address",
    "cluster_url",
    "parse_messages",
    "parse_state",
    "pipelined",
    "store_errors",
    "text",
    "track_sends",
]

logger = logging.getLogger("agentmem.stores.redis")

T = TypeVar("T")


#: A sync or asyncio client, of one server or of a cluster.
Client: TypeAlias = (
    "redis.Redis | redis.asyncio.Redis | redis.cluster.RedisCluster"
    " | redis.asyncio.cluster.RedisCluster"
)

#: The errors that mean "Redis cannot serve this now" (rather than "Redis refused it"): the
#: network, a timeout, and a cluster in failover (CLUSTERDOWN, TRYAGAIN, a slot nobody
#: serves yet). Retried until the call's deadline, then raised as StoreUnavailableError.
UNAVAILABLE: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    ClusterDownError,
    TryAgainError,
    SlotNotCoveredError,
)

_CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def cluster_url(url: str) -> tuple[str, bool]:
    """Split a URL into the URL redis-py reads and whether it names a Redis Cluster.

    A cluster is named by the scheme ``redis+cluster://`` (``rediss+cluster://`` for TLS)
    or by the query flag ``cluster=true`` on a ``redis://``/``rediss://`` URL (the forms
    other Redis clients read, e.g. go-redis and ``redis-url-py``); redis-py itself has no
    URL form for it and picks ``RedisCluster.from_url`` instead. The flag is removed from
    the URL returned.

    Raises:
        ValueError: ``cluster=`` is not a boolean, or a cluster is named by another scheme
            (``unix://``).

    Example:
        >>> cluster_url("redis+cluster://10.0.0.1:7000")
        ('redis://10.0.0.1:7000', True)
        >>> cluster_url("redis://10.0.0.1:7000/0?cluster=true")
        ('redis://10.0.0.1:7000/0', True)
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    cluster = scheme in _CLUSTER_SCHEMES
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    kept = []
    for name, value in query:
        if name != "cluster":
            kept.append((name, value))
        elif value.lower() in _TRUE:
            cluster = True
        elif value.lower() not in _FALSE:
            msg = f"cluster={value!r} is not a boolean (use cluster=true or cluster=false)"
            raise ValueError(msg)
    if cluster and scheme not in (*_CLUSTER_SCHEMES, *_CLUSTER_SCHEMES.values()):
        msg = (
            "a Redis Cluster is reached over TCP: redis+cluster://host:port (or "
            "rediss+cluster:// for TLS)"
        )
        raise ValueError(msg)
    if scheme not in _CLUSTER_SCHEMES and len(kept) == len(query):
        return url, cluster  # nothing to rewrite
    rewritten = parts._replace(
        scheme=_CLUSTER_SCHEMES.get(scheme, parts.scheme),
        query=urllib.parse.urlencode(kept),
    )
    return urllib.parse.urlunsplit(rewritten), cluster


#: Issues Redis command(s) on the client (or pipeline) it is given, and returns the reply (an
#: awaitable of it on an asyncio client). The store's programs describe their commands as
#: ops, so one op serves the sync and the async face. (``Any``: redis-py's cluster pipelines
#: share the commands of its clients but not their type.)
Op: TypeAlias = Callable[[Any], Any]


def pipelined(*ops: Op) -> Op:
    """One op that sends ``ops`` in one round trip (a pipeline, not a transaction); its
    reply is the list of theirs."""

    def send(client: Client) -> Any:
        pipe = client.pipeline(transaction=False)
        for op in ops:
            op(pipe)
        return pipe.execute()

    return send


def text(value: Any) -> str:
    """A reply value as ``str``, whether the client decodes responses or not."""
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_messages(rows: Sequence[Any], key: str) -> list[StoredMessage]:
    """``ZRANGE ... WITHSCORES`` rows (member JSON, seq score) of the log ``key`` as stored
    messages.

    Raises:
        StoreError: A member is not a message (corrupted, or written by an incompatible
            agentmem); names the key and the seq, the cause chained.
    """
    parsed: list[StoredMessage] = []
    for member, score in rows:
        try:
            parsed.append(StoredMessage(int(score), Message.from_json(member)))
        except (ValidationError, ValueError, TypeError) as exc:
            seq = f"{score:g}" if isinstance(score, float) else repr(score)
            msg = (
                f"message {seq} of the Redis key {key!r} is unreadable (corrupted, or "
                f"written by an incompatible agentmem): {exc}"
            )
            raise StoreError(msg) from exc
    return parsed


def parse_state(
    raw: bytes | str | None, key: str, field: str | None = None
) -> dict[str, Any] | None:
    """A JSON object stored at the Redis ``key`` (in its hash ``field``, if given), or
    ``None`` when nothing is.

    Raises:
        StoreError: It is not a JSON object (corrupted); names the key, the cause chained.
    """
    if raw is None:
        return None
    where = f"the Redis key {key!r}" if field is None else f"{field!r} of the Redis hash {key!r}"
    try:
        value = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError from bytes
        msg = f"{where} is corrupted: {exc}"
        raise StoreError(msg) from exc
    if not isinstance(value, dict):
        msg = f"{where} is corrupted: a JSON {type(value).__name__} where an object belongs"
        raise StoreError(msg)
    return value


def address(client: Client) -> str:
    """Where ``client`` connects, for error messages."""
    if isinstance(client, (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster)):
        node = client.get_default_node()  # None until an asyncio client first connects
        if node is None:
            return "cluster"
        return f"cluster {node.host}:{node.port}"
    kwargs = client.get_connection_kwargs()
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


# -- the call context ----------------------------------------------------------------------


@dataclass
class _Call:
    """One store call: when it must give up, and whether one of its commands went out."""

    deadline: float  # time.monotonic() value; inf = no deadline
    sent: bool = False


_CALL: ContextVar[_Call | None] = ContextVar("agentmem_redis_call", default=None)


def _note_sent() -> None:
    call = _CALL.get()
    if call is not None:
        call.sent = True


@contextmanager
def store_errors(
    where: str,
    action: str,
    *,
    budget: float | None = None,
    tracks_sends: bool = False,
    retry_advice: str | None = None,
) -> Iterator[None]:
    """Run one store call; re-raise redis-py errors as :class:`StoreError` saying what failed.

    Args:
        where: The server address, for messages.
        action: What the call was doing ("appending to session 's1'").
        budget: Seconds the call may take, retries included (``None``: no deadline). The
            deadline retry classes below stop retrying when the next try could not finish
            within it.
        tracks_sends: Whether the client's connections report sends (see
            :func:`track_sends`); without that a failed write's outcome is always unknown.
        retry_advice: ``None`` for a read. For a write, how to retry it safely when its
            outcome is unknown; it ends the error message.

    Raises:
        StoreUnavailableError: The server could not be reached or did not answer in time;
            ``outcome`` is ``"unknown"`` when a write may have been applied.
        StoreError: Redis answered with an error.
    """
    started = time.monotonic()
    call = _Call(deadline=math.inf if budget is None else started + budget)
    token = _CALL.set(call)
    try:
        yield
    except UNAVAILABLE as exc:
        took = time.monotonic() - started
        outcome: StoreOutcome = "not_applied"
        if retry_advice is not None and (call.sent or not tracks_sends):
            outcome = "unknown"
        raise StoreUnavailableError(
            _unavailable_message(where, action, exc, took, outcome, call.sent, retry_advice),
            outcome=outcome,
        ) from exc
    except (redis.RedisError, RedisClusterException) as exc:
        msg = f"Redis at {where} failed while {action}: {exc}"
        if isinstance(exc, AskError):  # MOVED or ASK: a cluster node, reached as one server
            msg += (
                ". The server is a node of a Redis Cluster: name it with "
                "redis+cluster://host:port (or add ?cluster=true to the URL)"
            )
        raise StoreError(msg) from exc
    finally:
        _CALL.reset(token)


def _unavailable_message(
    where: str,
    action: str,
    exc: Exception,
    took: float,
    outcome: StoreOutcome,
    sent: bool,
    retry_advice: str | None,
) -> str:
    what = "timed out" if isinstance(exc, redis.TimeoutError) else "failed"
    if isinstance(exc, (ClusterDownError, TryAgainError, SlotNotCoveredError)):
        what = "failed (the cluster was failing over or resharding)"
    head = (
        f"Redis at {where} is unavailable: {action} {what} after {took:.1f} s, "
        f"retries included ({type(exc).__name__}: {exc}). "
    )
    check = (
        "Check that the server is running, reachable and not overloaded, and that the URL "
        "is right; from_url(..., timeout=, deadline=) sets how long a call may wait."
    )
    if retry_advice is None:  # a read
        return head + check
    if outcome == "not_applied":
        return (
            head + "Nothing was written (outcome 'not_applied'): the request was never "
            "sent, so retrying is safe. " + check
        )
    why = (
        "the request was sent but no reply came back"
        if sent
        else "this store cannot tell whether the request was sent (it was given its "
        "clients rather than built by from_url, or it talks to a cluster)"
    )
    return (
        head + f"The write may or may not have been applied (outcome 'unknown'): {why}. "
        f"To retry safely, {retry_advice}. " + check
    )


# -- retries bounded by the call's deadline ------------------------------------------------


def _deadline(budget: float | None) -> float:
    call = _CALL.get()
    if call is not None:
        return call.deadline
    return math.inf if budget is None else time.monotonic() + budget


def _next_delay(
    backoff: AbstractBackoff,
    retries: int,
    attempt_time: float,
    failures: int,
    deadline: float,
    error: Exception,
) -> float | None:
    """Seconds to wait before the next try, or ``None`` to give up."""
    if 0 <= retries < failures:
        return None
    delay = float(backoff.compute(failures))
    if time.monotonic() + delay + attempt_time > deadline:
        logger.debug("Redis: giving up after %d failed tries (deadline): %r", failures, error)
        return None
    logger.debug("Redis: try %d failed (%r); retrying in %.2f s", failures, error, delay)
    return delay


class _Step(Request[Any]):
    """A request to call ``fn()``; the async driver also awaits what it returns when that is
    awaitable. redis-py hands its retry loops and connection hooks sync callables from a
    sync client and async ones (or, for failure callbacks, either) from an asyncio client,
    so the loops and hooks below are written once as programs of steps."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn

    def run(self) -> Any:
        return self._fn()

    async def arun(self) -> Any:
        result = self._fn()
        return await result if inspect.isawaitable(result) else result


def _attempts(
    retry: DeadlineRetry | AsyncDeadlineRetry,
    do: Callable[[], T] | Callable[[], Awaitable[T]],
    fail: Callable[..., Any],
    is_retryable: Callable[[Exception], bool] | None,
    with_failure_count: bool,
) -> Program[T]:
    """The retry loop of both deadline retry classes: ``do`` until it succeeds, a failure is
    not retryable, or :func:`_next_delay` gives up (retry count or call deadline)."""
    deadline = _deadline(retry.budget)
    retry._backoff.reset()  # type: ignore[no-untyped-call]
    failures = 0
    while True:
        try:
            result: T = yield from _Step(do)
            return result
        except retry._supported_errors as error:
            if is_retryable is not None and not is_retryable(error):
                raise
            failures += 1
            args = (error, failures) if with_failure_count else (error,)
            yield from _Step(lambda: fail(*args))  # noqa: B023 - called right here
            delay = _next_delay(
                retry._backoff, retry._retries, retry.attempt_time, failures, deadline, error
            )
            if delay is None:
                raise
            if delay > 0:
                yield from call(time.sleep, _async_sleep, delay)


async def _async_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class _Deadline:
    """The two settings both retry classes add to redis-py's ``Retry`` (see
    :class:`DeadlineRetry`); a mixin placed before ``Retry`` in their bases."""

    def __init__(
        self,
        backoff: AbstractBackoff,
        retries: int,
        supported_errors: tuple[type[Exception], ...],
        *,
        attempt_time: float,
        budget: float | None,
    ) -> None:
        super().__init__(backoff, retries, supported_errors)  # type: ignore[call-arg]
        self.attempt_time, self.budget = attempt_time, budget


class DeadlineRetry(_Deadline, Retry):
    """A redis-py ``Retry`` that also stops at the deadline of the running store call.

    A retry is only started when it could end, at its ``attempt_time`` (the socket
    timeout), before the deadline of the store call under way (see :func:`store_errors`),
    or before ``budget`` seconds from the start of this retry loop outside a store call.

    Args:
        backoff: The redis-py backoff between tries.
        retries: At most this many retries per loop (redis-py nests a few loops per call).
        supported_errors: The errors that are retried.
        attempt_time: The longest one try is expected to take (the socket timeout).
        budget: Seconds a retry loop may take when no store call is under way.
    """

    def call_with_retry(
        self,
        do: Callable[[], T],
        fail: Callable[[Exception], Any] | Callable[[Exception, int], Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        return drive(_attempts(self, do, fail, is_retryable, with_failure_count))


class AsyncDeadlineRetry(_Deadline, redis.asyncio.retry.Retry):
    """The asyncio twin of :class:`DeadlineRetry` (same arguments, same policy, same loop)."""

    async def call_with_retry(
        self,
        do: Callable[[], Awaitable[T]],
        fail: Callable[[Exception], Any] | Callable[[Exception, int], Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        return await adrive(_attempts(self, do, fail, is_retryable, with_failure_count))


# -- telling the call context when a command goes out ---------------------------------------
#
# Connection classes with these hooks raise the call's *sent* flag just before one of its
# commands is written. Connecting (with its handshake) and the health-check PING happen
# first and do not count: while they fail, nothing of the caller's has gone out.


def _own_sends(
    connection: _SendTracking | _AsyncSendTracking, step: Callable[[], Any]
) -> Program[None]:
    """Connect or health-check: the sends in ``step`` are the connection's, not the call's."""
    connection._nesting += 1
    try:
        yield from _Step(step)
    finally:
        connection._nesting -= 1


def _send(
    connection: _SendTracking | _AsyncSendTracking,
    send: Callable[..., Any],
    command: Any,
    check_health: bool,
) -> Program[None]:
    if not connection._nesting:
        yield from _Step(connection.connect)  # a no-op when connected
        if check_health:
            yield from _Step(connection.check_health)
        _note_sent()
        check_health = False
    yield from _Step(lambda: send(command, check_health=check_health))


class _SendTracking(redis.connection.AbstractConnection):
    """Mixin for a redis-py connection class: reports sends (see above)."""

    _nesting = 0  # > 0 while connecting or health-checking: those sends are ours, not the call's

    def connect(self) -> None:
        drive(_own_sends(self, super().connect))

    def check_health(self) -> None:
        drive(_own_sends(self, super().check_health))

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        drive(_send(self, super().send_packed_command, command, check_health))


class _AsyncSendTracking(redis.asyncio.connection.AbstractConnection):
    """The asyncio twin of :class:`_SendTracking`."""

    _nesting = 0

    async def connect(self) -> None:
        await adrive(_own_sends(self, super().connect))

    async def check_health(self) -> None:
        await adrive(_own_sends(self, super().check_health))

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        await adrive(_send(self, super().send_packed_command, command, check_health))


_TRACKING_CLASSES: dict[type, type] = {}


def _tracking_class(base: type) -> type | None:
    """``base`` (a redis-py connection class) with send tracking, or ``None`` for a class
    it does not know."""
    if issubclass(base, (_SendTracking, _AsyncSendTracking)):
        return base
    mixin: type
    if issubclass(base, redis.asyncio.connection.AbstractConnection):
        mixin = _AsyncSendTracking
    elif issubclass(base, redis.connection.AbstractConnection):
        mixin = _SendTracking
    else:
        return None
    tracked = _TRACKING_CLASSES.get(base)
    if tracked is None:
        tracked = type(f"SendTracking{base.__name__}", (mixin, base), {"__module__": __name__})
        _TRACKING_CLASSES[base] = tracked
    return tracked


def track_sends(client: redis.Redis | redis.asyncio.Redis) -> bool:
    """Make the connections ``client`` opens from now on report sends to the call context.

    Swaps the pool's connection class (plain TCP, TLS or Unix socket, as the URL chose) for
    a subclass with the tracking mixin; call it before the client first connects. Returns
    ``False`` (and changes nothing) for a connection class it does not know.
    """
    pool = client.connection_pool
    tracked = _tracking_class(pool.connection_class)
    if tracked is None:
        return False
    pool.connection_class = tracked
    return True


class LuaScript(NamedTuple):
    """A Lua script and its SHA1 (what ``EVALSHA`` and ``SCRIPT LOAD`` use)."""

    source: str
    sha: str

    @classmethod
    def of(cls, source: str) -> LuaScript:
        return cls(source, hashlib.sha1(source.encode()).hexdigest())


class SessionKeys(NamedTuple):
    """The keys of one session, all in the slot of the hash tag ``{session_id}``.

    Attributes:
        seq: String counter of the last seq handed out. Survives ``clear()`` so seqs are
            never reused.
        log: Sorted set: member = message JSON, score = seq.
        ids: Hash: message id -> seq; makes appends idempotent.
        state: Hash: state key -> JSON document.
        owner: String: the ownership record (JSON). Survives ``clear()``, so a cleared
            session stays its owner's.
    """

    seq: str
    log: str
    ids: str
    state: str
    owner: str

    @classmethod
    def of(cls, prefix: str, session_id: str) -> SessionKeys:
        base = f"{prefix}:{{{session_id}}}"
        return cls(f"{base}:seq", f"{base}:log", f"{base}:ids", f"{base}:state", f"{base}:owner")


def _session_write(body: str, result: str) -> LuaScript:
    """A script that writes one session (KEYS: its :class:`SessionKeys`, ARGV[1]: the TTL in
    ms, 0 = none): ``body`` runs with ``ttl`` set, then every key gets the TTL, then the
    script returns the Lua expression ``result``."""
    return LuaScript.of(
        f"\nlocal ttl = tonumber(ARGV[1])\n{body}"
        "if ttl > 0 then\n"
        "  for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end\n"
        "end\n"
        f"return {result}\n"
    )


# KEYS: seq, log, ids, state, owner. ARGV: ttl_ms (0 = none), exclusive ('1' | '0'), then
# id_1, json_1, id_2, json_2, ... Returns the seq of every message, in argument order. A
# message whose id is already in the session (a retry of an append that was applied but whose
# reply was lost, or a repeat within the batch) is not stored again; its existing seq is
# returned. Exclusive: if the session holds any of the ids, nothing is stored, and a message
# it does not hold gets 0.
APPEND = _session_write(
    """\
local n = (#ARGV - 2) / 2
local seqs, fresh, first_at = {}, {}, {}
local held = false
for i = 1, n do
  local id = ARGV[2 * i + 1]
  local known = redis.call('HGET', KEYS[3], id)
  if known then
    seqs[i] = tonumber(known)
    held = true
  elseif first_at[id] then
    seqs[i] = -first_at[id]
  else
    first_at[id] = i
    fresh[#fresh + 1] = i
  end
end
if held and ARGV[2] == '1' then
  for i = 1, n do
    if seqs[i] == nil or seqs[i] < 0 then seqs[i] = 0 end
  end
  fresh = {}
end
if #fresh > 0 then
  local seq = redis.call('INCRBY', KEYS[1], #fresh) - #fresh
  local zargs, hargs = {}, {}
  for j, i in ipairs(fresh) do
    seq = seq + 1
    seqs[i] = seq
    zargs[#zargs + 1] = seq
    zargs[#zargs + 1] = ARGV[2 * i + 2]
    hargs[#hargs + 1] = ARGV[2 * i + 1]
    hargs[#hargs + 1] = seq
    if #zargs >= 1000 or j == #fresh then
      redis.call('ZADD', KEYS[2], unpack(zargs))
      redis.call('HSET', KEYS[3], unpack(hargs))
      zargs, hargs = {}, {}
    end
  end
end
for i = 1, n do
  if seqs[i] < 0 then seqs[i] = seqs[-seqs[i]] end
end
""",
    "seqs",
)

# KEYS: seq, log, ids, state, owner. ARGV: ttl_ms (0 = none), op ('set' | 'del'), field[, json].
STATE = _session_write(
    """\
if ARGV[2] == 'set' then
  redis.call('HSET', KEYS[4], ARGV[3], ARGV[4])
else
  redis.call('HDEL', KEYS[4], ARGV[3])
end
""",
    "1",
)

# KEYS: seq, log, ids, state, owner. ARGV: ttl_ms (0 = none), op ('claim' | 'set'), json.
# Returns the ownership record in force: a claim writes only where none exists (SET NX), so
# of two racing claims exactly one wins; the owner key expires with the session's keys.
OWNER = _session_write(
    """\
if ARGV[2] == 'claim' then
  redis.call('SET', KEYS[5], ARGV[3], 'NX')
else
  redis.call('SET', KEYS[5], ARGV[3])
end
""",
    "redis.call('GET', KEYS[5])",
)
