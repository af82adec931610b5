"""Redis session store: the message log and state of each session in a few Redis keys.

Key layout (``prefix`` defaults to ``agentmem``), one hash tag per session so that all of a
session's keys land in one Redis Cluster slot and every multi-key operation stays legal there:

* ``{prefix}:{<session_id>}:log`` - sorted set, member = message JSON, score = seq.
  ``read(after, limit)`` is ``ZRANGE (after +inf BYSCORE LIMIT 0 limit`` and ``read_last(n)``
  is ``ZRANGE -n -1``: both O(log n + k) wherever they start, which a list (O(offset) from the
  nearest end) would not give for reads from the middle of a long log.
* ``{prefix}:{<session_id>}:seq`` - the seq counter. It survives ``clear()``, so seqs are
  never reused within a session (without a TTL the counter stays for good: a few bytes).
* ``{prefix}:{<session_id>}:ids`` - hash message id -> seq (see *idempotent appends*).
* ``{prefix}:{<session_id>}:state`` - hash state key -> JSON document.
* ``{prefix}:sessions`` - sorted set of session ids (score = expiry time, ``+inf`` without
  TTL), the index behind :meth:`RedisSessionStore.sessions` (no ``KEYS`` scans).

**Redis Cluster.** ``redis+cluster://host:port`` (or ``redis://host:port?cluster=true``)
makes :meth:`RedisSessionStore.from_url` build ``redis.cluster.RedisCluster`` clients; a
cluster client can also be passed in. Every script touches the keys of one session, so one
slot; the session index lives in another slot and is only written by its own commands,
which a cluster pipeline sends to the node that serves it. A call that meets a failover
(a node unreachable, ``CLUSTERDOWN``, ``TRYAGAIN``) is retried until its deadline: it
either succeeds once a replica has taken over or raises
:class:`~agentmem.errors.StoreUnavailableError`. Replication in Redis Cluster is
asynchronous, so a master killed in the instant between acknowledging a write and passing
it to its replica loses that write; Redis documents this, and agentmem does not hide it.

**Atomic appends.** One Lua script increments the counter by the number of new messages and
adds them to the log in the same step: all or nothing, and no two writers ever get the same
seq, however many write concurrently.

**Idempotent appends.** A message whose id is already in the session is not stored again;
``append`` returns its existing seq. So when a connection drops after Redis applied an append
but before its reply arrived, the client's automatic retry (and your own retry after a
:class:`~agentmem.errors.StoreUnavailableError` whose ``outcome`` is ``"unknown"``) cannot
duplicate messages, provided you retry with the same ``Message`` objects, or call
``process_interaction`` again with the same ``turn_id`` (it derives the turn's message ids
from it: see :mod:`agentmem.controller.turns`). Message ids are random UUIDs unless you set
them, so distinct messages never collide. (Appending the very
same ``Message`` object twice therefore stores it once, unlike the in-memory store.)

**Bounded calls.** Stores built by :meth:`RedisSessionStore.from_url` never wait on a
stalled, unreachable or restarting server for longer than about its ``deadline`` (10 s by
default): each network step times out after ``timeout`` seconds and retries stop at the
deadline. The :class:`~agentmem.errors.StoreUnavailableError` they then raise says whether a
write certainly did not happen (``outcome == "not_applied"``) or may have (``"unknown"``).

**TTL.** With ``session_ttl``, every write (append, set_state, delete_state) resets the expiry
of all the session's keys, so a session disappears ``session_ttl`` seconds after its last write.

Example:
    >>> from agentmem.stores.redis import RedisSessionStore
    >>> from agentmem.types import Message
    >>> store = RedisSessionStore.from_url("redis://localhost:6379/0")  # doctest: +SKIP
    >>> store.append("s1", [Message(role="user", content="hi")])  # doctest: +SKIP
    [1]
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.cluster
import redis.connection
from redis.backoff import ExponentialWithJitterBackoff, NoBackoff
from redis.exceptions import NoScriptError, RedisClusterException
from redis.retry import Retry

from agentmem._sansio import Program, Request, async_twin, call, twin
from agentmem._util.checks import check_int
from agentmem._util.executor import run_in_executor
from agentmem.errors import (
    ConfigurationError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
)
from agentmem.stores._redis_support import (
    APPEND,
    OWNER,
    STATE,
    UNAVAILABLE,
    AsyncDeadlineRetry,
    DeadlineRetry,
    LuaScript,
    Op,
    SessionKeys,
    address,
    cluster_url,
    parse_messages,
    parse_state,
    pipelined,
    store_errors,
    text,
    track_sends,
)
from agentmem.stores.base import (
    StoredMessage,
    check_messages,
    check_state_key,
    dump_state,
    validate_session_id,
)
from agentmem.types import Message

__all__ = ["RedisSessionStore"]

# Entries of the session index whose expiry (by a writer's clock) is older than this are
# pruned; the margin tolerates clock skew between writers.
_INDEX_GRACE_SECONDS = 60.0
_EXISTS_BATCH = 1000
# from_url clients PING a connection idle for longer than this before using it again.
_HEALTH_CHECK_INTERVAL = 30

# How to retry a write whose outcome is unknown (the end of StoreUnavailableError messages).
_RETRY_APPEND = (
    "call process_interaction (or record_messages) again with the same turn_id, or append "
    "the same Message objects again (or messages with the same ids): appends are "
    "idempotent by message id, so nothing is stored twice; a call without a turn_id, or "
    "new Message objects, would get new ids and be stored twice"
)
_RETRY_STATE = "repeat the call: setting or deleting a state key is idempotent"
_RETRY_CLEAR = "repeat the clear: it is idempotent"


class RedisSessionStore:
    """Session store in Redis (``pip install tiered-agentmem[redis]``), sync and native asyncio.

    Args:
        client: A ``redis.Redis`` (or ``redis.cluster.RedisCluster``) for the sync methods.
        async_client: A ``redis.asyncio.Redis`` (or ``redis.asyncio.cluster.RedisCluster``)
            for the ``a*`` methods. Without it they send their commands with ``client``,
            from a thread.
        prefix: First part of every key; stores with different prefixes share nothing.
        session_ttl: Seconds after its last write at which a session expires (``None``: never).

    Clients you pass in stay yours: :meth:`close` does not close them (as redis-py leaves an
    injected connection pool open). Clients built by :meth:`from_url` are closed by
    :meth:`close` (sync client) and :meth:`aclose` (both clients).

    When Redis cannot be reached or does not answer in time, calls raise
    :class:`~agentmem.errors.StoreUnavailableError`; its ``outcome`` says whether a write
    certainly did not happen (``"not_applied"``) or may have (``"unknown"``). Only stores built
    by :meth:`from_url` bound how long a call waits and can tell a write was not sent: with
    clients you pass in, set their timeouts yourself, and failed writes report ``"unknown"``.

    Example:
        >>> import redis
        >>> store = RedisSessionStore(redis.Redis(), session_ttl=3600)  # doctest: +SKIP
        >>> store.set_state("s1", "summary", {"text": "..."})  # doctest: +SKIP
    """

    exclusive_appends: ClassVar[bool] = True  # see ExclusiveAppends

    def __init__(
        self,
        client: redis.Redis | redis.cluster.RedisCluster | None = None,
        *,
        async_client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster | None = None,
        prefix: str = "agentmem",
        session_ttl: float | None = None,
    ) -> None:
        if client is None and async_client is None:
            msg = (
                "RedisSessionStore needs client=redis.Redis(...) and/or "
                "async_client=redis.asyncio.Redis(...); or use RedisSessionStore.from_url(url)"
            )
            raise ConfigurationError(msg)
        if not isinstance(prefix, str) or not prefix or "{" in prefix or "}" in prefix:
            msg = f"prefix must be a non-empty string without braces, got {prefix!r}"
            raise ConfigurationError(msg)
        if session_ttl is not None and not (math.isfinite(session_ttl) and session_ttl > 0):
            msg = f"session_ttl must be a positive number of seconds or None, got {session_ttl!r}"
            raise ConfigurationError(msg)
        self._client = client
        self._async_client = async_client
        self._prefix = prefix
        self._ttl_ms = 0 if session_ttl is None else max(1, round(session_ttl * 1000))
        self._session_ttl = session_ttl
        self._index = f"{prefix}:sessions"
        self._where = address(client if client is not None else async_client)  # type: ignore[arg-type]
        self._cluster = isinstance(
            client if client is not None else async_client,
            (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster),
        )
        self._owns_clients = False
        # from_url on a cluster: every command is retried (backoff, then the call's deadline)
        # while the cluster fails over; redis-py's cluster client retries without waiting.
        self._cluster_retry: DeadlineRetry | None = None
        self._cluster_aretry: AsyncDeadlineRetry | None = None
        self._tracks_sends = False  # from_url: connections report when a command goes out
        self._deadline: float | None = None  # from_url: seconds one call may take
        self._closed = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "agentmem",
        session_ttl: float | None = None,
        timeout: float = 5.0,
        deadline: float | None = None,
        retries: int = 10,
    ) -> RedisSessionStore:
        """Build the sync and asyncio clients from a URL, with bounded timeouts and retries.

        However the server misbehaves (down, restarting, stalled, unreachable), every call
        returns or raises within a bounded time:

        * each network step (connecting, sending, waiting for a reply) gives up after
          ``timeout`` seconds;
        * a failed step is retried with exponential backoff and jitter (0.1 s up to 1 s), at
          most ``retries`` times, and only if the retry can end (at its ``timeout``) before
          ``deadline`` seconds have passed since the call started;
        * so a call raises :class:`~agentmem.errors.StoreUnavailableError` after at most
          about ``max(deadline, timeout)`` seconds: 10 s by default. (Only a server that
          answers each step of one try just before its timeout can stretch that try to a
          few ``timeout`` s.)

        A restart or failover is ridden through transparently when the server answers again
        within about ``deadline - timeout`` seconds (5 s by default). A connection idle for
        more than 30 s is checked with a PING before it is used again, so connections dropped
        silently (server restart, NAT, firewall) are replaced first.

        The error's ``outcome`` says whether a write is known not to have happened
        (``"not_applied"``: retrying is safe) or may have happened (``"unknown"``). Retried
        appends cannot duplicate messages if you retry with the same ``Message`` objects:
        appends are idempotent by message id, automatic retries included.

        On a Redis Cluster the same bounds hold; while a master fails over, each command is
        retried (the same backoff) until the deadline, so a call either succeeds on the
        promoted replica or raises :class:`~agentmem.errors.StoreUnavailableError`. Set
        ``deadline`` above the cluster's failover time (about twice its
        ``cluster-node-timeout``, plus the election) to ride through failovers. Failed
        writes on a cluster report ``outcome == "unknown"``.

        Args:
            url: ``redis://[[user]:password@]host:port/db``, ``rediss://...`` (TLS) or
                ``unix:///path/to/redis.sock``; for a Redis Cluster,
                ``redis+cluster://[[user]:password@]host:port`` (``rediss+cluster://``
                for TLS) or ``redis://host:port?cluster=true``, naming any node of it.
            prefix: First part of every key (see the class).
            session_ttl: Seconds after its last write at which a session expires (see the
                class).
            timeout: Seconds one network step may take: the socket connect timeout and the
                socket read/write timeout. Default 5.
            deadline: Seconds one call may take, retries included; at least ``timeout``.
                Default ``None``: twice ``timeout``.
            retries: At most this many retries of one failed step. Default 10. (On a
                cluster, a failed command is retried until the deadline however many
                tries that takes: a failover is a run of quick refusals.)

        Returns:
            A store that owns both clients: :meth:`close` closes the sync one, :meth:`aclose`
            both.

        Raises:
            ConfigurationError: The URL is not a Redis URL, or an option is out of range.
            StoreUnavailableError: For a cluster only, which ``from_url`` asks for its slot
                map: no node named by the URL answered within ``timeout``.

        Example:
            >>> store = RedisSessionStore.from_url("redis://localhost:6379/0")  # doctest: +SKIP
            >>> fast = RedisSessionStore.from_url(
            ...     "redis://localhost:6379/0", timeout=0.5, deadline=2.0
            ... )  # doctest: +SKIP
            >>> on_cluster = RedisSessionStore.from_url(
            ...     "redis+cluster://10.0.0.1:7000", deadline=20.0
            ... )  # doctest: +SKIP
        """
        timeout, deadline = _check_timeouts(timeout, deadline)
        check_int(retries, "retries", minimum=0)
        try:
            plain_url, cluster = cluster_url(url)
        except ValueError as exc:
            msg = f"not a usable Redis URL {url!r}: {exc}"
            raise ConfigurationError(msg) from exc
        errors: list[type[redis.RedisError]] = [redis.ConnectionError, redis.TimeoutError]
        backoff = ExponentialWithJitterBackoff(base=0.1, cap=1.0)
        bounds = {"attempt_time": timeout, "budget": deadline}
        if cluster:
            return cls._from_cluster_url(
                url, plain_url, prefix, session_ttl, timeout, deadline, backoff, bounds
            )
        options: dict[str, Any] = {
            "retry_on_error": errors,
            "socket_timeout": timeout,
            "socket_connect_timeout": timeout,
            "health_check_interval": _HEALTH_CHECK_INTERVAL,
        }
        try:
            client = redis.Redis.from_url(
                url, retry=DeadlineRetry(backoff, retries, tuple(errors), **bounds), **options
            )
            async_client = redis.asyncio.Redis.from_url(
                url,
                retry=AsyncDeadlineRetry(backoff, retries, tuple(errors), **bounds),
                **options,
            )
        except ValueError as exc:
            msg = f"not a usable Redis URL {url!r}: {exc}; expected redis://host:port/db"
            raise ConfigurationError(msg) from exc
        store = cls(client, async_client=async_client, prefix=prefix, session_ttl=session_ttl)
        store._owns_clients = True
        store._tracks_sends = track_sends(client) and track_sends(async_client)
        store._deadline = deadline
        return store

    @classmethod
    def _from_cluster_url(
        cls,
        given: str,
        url: str,
        prefix: str,
        session_ttl: float | None,
        timeout: float,
        deadline: float,
        backoff: ExponentialWithJitterBackoff,
        bounds: dict[str, Any],
    ) -> RedisSessionStore:
        """``from_url`` for a Redis Cluster: redis-py's cluster clients, which try each
        command once (following MOVED/ASK and refreshing the slot map on errors), inside a
        retry loop bounded by the call's deadline alone. ``given`` is the caller's URL (for
        messages), ``url`` the one redis-py reads."""
        options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        try:
            parsed = redis.connection.parse_url(url)  # type: ignore[no-untyped-call]
        except ValueError as exc:
            msg = f"not a usable Redis URL {given!r}: {exc}; expected redis+cluster://host:port"
            raise ConfigurationError(msg) from exc
        if parsed.get("db", 0) not in (0, None):
            msg = f"not a usable Redis URL {given!r}: a cluster has only database 0"
            raise ConfigurationError(msg)
        # Only the node's address in the message: the URL may hold a password.
        where = f"Redis Cluster at {parsed.get('host', 'localhost')}:{parsed.get('port', 6379)}"
        try:
            async_client = redis.asyncio.cluster.RedisCluster.from_url(
                url, retry=redis.asyncio.retry.Retry(NoBackoff(), 0), **options
            )
            # The sync client asks a node for the slot map now.
            client = redis.cluster.RedisCluster.from_url(
                url, retry=Retry(NoBackoff(), 0), **options
            )
        except ValueError as exc:
            msg = f"not a usable Redis URL {given!r}: {exc}; expected redis+cluster://host:port"
            raise ConfigurationError(msg) from exc
        except (redis.RedisError, RedisClusterException) as exc:  # UNAVAILABLE and the rest
            msg = (
                f"{where} is unavailable: could not read its slot map ({exc}). Check that "
                "the URL names a running node of a cluster (a single server takes "
                "redis://host:port/db)."
            )
            raise StoreUnavailableError(msg, outcome="not_applied") from exc
        store = cls(client, async_client=async_client, prefix=prefix, session_ttl=session_ttl)
        store._owns_clients = True
        store._deadline = deadline
        store._cluster_retry = DeadlineRetry(backoff, -1, UNAVAILABLE, **bounds)
        store._cluster_aretry = AsyncDeadlineRetry(backoff, -1, UNAVAILABLE, **bounds)
        return store

    # -- plumbing ------------------------------------------------------------------------
    #
    # Each operation is written once, as a program (agentmem._sansio) that yields requests
    # for Redis commands: ``self._command(op)``, where ``op`` issues one command (or a
    # pipeline of them) on whichever client it is given. The sync face sends it with the
    # sync client; the async face awaits it on the asyncio client, or runs it with the sync
    # client in a thread when the store has no asyncio client.

    def _check_open(self) -> None:
        if self._closed:
            msg = "RedisSessionStore is closed; create a new store"
            raise StoreClosedError(msg)

    def _sync(self) -> redis.Redis | redis.cluster.RedisCluster:
        self._check_open()
        if self._client is None:
            msg = (
                "this RedisSessionStore has only an async client; use the async methods "
                "(aappend, aread, ...) or pass client=redis.Redis(...)"
            )
            raise ConfigurationError(msg)
        return self._client

    def _run(self, op: Op) -> Any:
        client = self._sync()
        if self._cluster_retry is not None:
            return self._cluster_retry.call_with_retry(lambda: op(client), _ignore)
        return op(client)

    async def _run_async(self, op: Op) -> Any:
        self._check_open()
        client = self._async_client
        if client is None:
            return await run_in_executor(self._run, op)
        if self._cluster_aretry is not None:
            return await self._cluster_aretry.call_with_retry(lambda: op(client), _ignore)
        return await op(client)

    def _command(self, op: Op) -> Request[Any]:
        """A request for the command(s) ``op`` issues, on the client of the running mode."""
        return call(self._run, self._run_async, op)

    def _ready(self) -> Request[None]:
        """The first step of every call: refuse a closed store, and a sync call on a store
        that has only an asyncio client (async calls on a sync-only store run in a thread)."""
        return call(_sync_ready, _async_ready, self)

    def _keys(self, session_id: str) -> SessionKeys:
        return SessionKeys.of(self._prefix, validate_session_id(session_id))

    def _expiry(self) -> float:
        return math.inf if self._session_ttl is None else time.time() + self._session_ttl

    def _errors(
        self, action: str, *, retry_advice: str | None = None
    ) -> AbstractContextManager[None]:
        """Bound one call by the deadline and map its Redis errors (``retry_advice``: writes)."""
        return store_errors(
            self._where,
            action,
            budget=self._deadline,
            tracks_sends=self._tracks_sends,
            retry_advice=retry_advice,
        )

    def _script(
        self, script: LuaScript, sid: str, keys: SessionKeys, args: list[Any]
    ) -> Program[Any]:
        # Script then index entry, in one round trip (on a cluster, two: redis-py's cluster
        # pipelines refuse scripts). EVALSHA needs the script cached on the server; after a
        # restart or a failover it is not (NOSCRIPT): load it and run both again, which is
        # safe because both commands are idempotent.
        run, index = self._script_ops(script, sid, keys, args)
        for attempt in (1, 2):
            try:
                if not self._cluster:
                    return (yield from self._command(pipelined(run, index)))[0]
                result = yield from self._command(run)
                yield from self._command(index)
                return result
            except NoScriptError:
                if attempt == 2:
                    raise
                yield from self._command(lambda c: c.script_load(script.source))
        return None  # pragma: no cover - the loop returns or raises

    def _script_ops(
        self, script: LuaScript, sid: str, keys: SessionKeys, args: list[Any]
    ) -> tuple[Op, Op]:
        """The script's EVALSHA, and the ZADD that indexes the session."""
        expiry = self._expiry()
        return (
            lambda c: c.evalsha(script.sha, len(keys), *keys, self._ttl_ms, *args),
            lambda c: c.zadd(self._index, {sid: expiry}, gt=True),
        )

    @staticmethod
    def _append_args(messages: Sequence[Message]) -> list[str]:
        args: list[str] = []
        for message in check_messages(messages):
            args += (message.id, message.to_json())
        return args

    def _range(self, after: int, limit: int | None) -> dict[str, Any]:
        page = {} if limit is None else {"offset": 0, "num": limit}
        return {"start": f"({int(after)}", "end": "+inf", "byscore": True, **page}

    # -- the API, sync and async (native redis.asyncio) -----------------------------------

    @twin
    def append(
        self, session_id: str, messages: Sequence[Message], *, exclusive: bool = False
    ) -> Program[list[int]]:
        """Append atomically and idempotently (by message id); return the seqs.
        ``exclusive=True``: nothing if the session holds any of the ids (see
        :meth:`~agentmem.stores.base.SessionStore.append`).

        Example:
            >>> store.append("s1", [Message(role="user", content="hi")])  # doctest: +SKIP
            [1]
        """
        yield from self._ready()
        keys = self._keys(session_id)
        if not messages:
            return []
        args = ["1" if exclusive else "0", *self._append_args(messages)]
        with self._errors(f"appending to session {session_id!r}", retry_advice=_RETRY_APPEND):
            seqs = yield from self._script(APPEND, session_id, keys, args)
        return [int(s) for s in seqs]

    @twin
    def read(
        self, session_id: str, *, after: int = 0, limit: int | None = None
    ) -> Program[list[StoredMessage]]:
        """Messages with ``seq > after`` in log order, at most ``limit`` of them."""
        yield from self._ready()
        keys = self._keys(session_id)
        if limit is not None and limit <= 0:
            return []
        page = self._range(after, limit)
        with self._errors(f"reading session {session_id!r}"):
            rows = yield from self._command(lambda c: c.zrange(keys.log, withscores=True, **page))
        return parse_messages(rows, keys.log)

    @twin
    def read_last(self, session_id: str, n: int) -> Program[list[StoredMessage]]:
        """The last ``n`` messages, in log order."""
        yield from self._ready()
        keys = self._keys(session_id)
        if n <= 0:
            return []
        with self._errors(f"reading session {session_id!r}"):
            rows = yield from self._command(lambda c: c.zrange(keys.log, -n, -1, withscores=True))
        return parse_messages(rows, keys.log)

    @twin
    def count(self, session_id: str) -> Program[int]:
        """Number of messages in the log."""
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(f"counting session {session_id!r}"):
            return int((yield from self._command(lambda c: c.zcard(keys.log))))

    @twin
    def last_seq(self, session_id: str) -> Program[int]:
        """The highest seq in the log, 0 when it is empty."""
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(f"reading session {session_id!r}"):
            rows = yield from self._command(lambda c: c.zrange(keys.log, -1, -1, withscores=True))
        return int(rows[0][1]) if rows else 0

    @twin
    def get_state(self, session_id: str, key: str) -> Program[dict[str, Any] | None]:
        """The JSON state ``key`` of the session, or ``None``."""
        check_state_key(key)
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(f"reading state {key!r} of session {session_id!r}"):
            raw = yield from self._command(lambda c: c.hget(keys.state, key))
        return parse_state(raw, keys.state, key)

    @twin
    def set_state(self, session_id: str, key: str, value: dict[str, Any]) -> Program[None]:
        """Replace the JSON state ``key`` of the session."""
        check_state_key(key)
        yield from self._ready()
        keys = self._keys(session_id)
        raw = dump_state(value)
        with self._errors(
            f"writing state {key!r} of session {session_id!r}", retry_advice=_RETRY_STATE
        ):
            yield from self._script(STATE, session_id, keys, ["set", key, raw])

    @twin
    def state_keys(self, session_id: str) -> Program[list[str]]:
        """The keys of the session's JSON state, sorted."""
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(f"listing the state of session {session_id!r}"):
            fields = yield from self._command(lambda c: c.hkeys(keys.state))
        return sorted(text(f) for f in fields)

    @twin
    def delete_state(self, session_id: str, key: str) -> Program[None]:
        """Remove the JSON state ``key`` (no error if absent)."""
        check_state_key(key)
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(
            f"deleting state {key!r} of session {session_id!r}", retry_advice=_RETRY_STATE
        ):
            yield from self._script(STATE, session_id, keys, ["del", key])

    @twin
    def clear(self, session_id: str) -> Program[None]:
        """Delete the session's messages and state (its seq counter and owner stay)."""
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(f"clearing session {session_id!r}", retry_advice=_RETRY_CLEAR):
            # Unindex after deleting, then re-index if a concurrent append landed meanwhile:
            # every session that has data stays in the index whatever the interleaving.
            yield from self._command(lambda c: c.delete(keys.log, keys.ids, keys.state))
            yield from self._command(lambda c: c.zrem(self._index, session_id))
            if (yield from self._command(lambda c: c.exists(keys.log, keys.state))):
                expiry = self._expiry()
                yield from self._command(
                    lambda c: c.zadd(self._index, {session_id: expiry}, gt=True)
                )

    @twin
    def get_owner(self, session_id: str) -> Program[dict[str, Any] | None]:
        """The session's ownership record, or ``None``."""
        yield from self._ready()
        keys = self._keys(session_id)
        with self._errors(f"reading the owner of session {session_id!r}"):
            raw = yield from self._command(lambda c: c.get(keys.owner))
        return parse_state(raw, keys.owner)

    @twin
    def claim_owner(self, session_id: str, record: dict[str, Any]) -> Program[dict[str, Any]]:
        """Store ``record`` unless the session has an owner (``SET NX`` in the session's
        slot); return the record in force."""
        return (yield from self._write_owner(session_id, "claim", record))

    @twin
    def set_owner(self, session_id: str, record: dict[str, Any]) -> Program[None]:
        """Replace the session's ownership record."""
        yield from self._write_owner(session_id, "set", record)

    def _write_owner(
        self, session_id: str, op: str, record: dict[str, Any]
    ) -> Program[dict[str, Any]]:
        yield from self._ready()
        keys = self._keys(session_id)
        raw = dump_state(record)
        with self._errors(
            f"writing the owner of session {session_id!r}", retry_advice=_RETRY_STATE
        ):
            stored = yield from self._script(OWNER, session_id, keys, [op, raw])
        # The script returns the record in force (it has just ensured one exists).
        found = parse_state(stored, keys.owner)
        if found is None:
            msg = f"the Redis key {keys.owner!r} holds no owner record after it was written"
            raise StoreError(msg)
        return found

    @twin
    def sessions(self) -> Program[list[str]]:
        """Ids of sessions that have messages or state, sorted."""
        yield from self._ready()
        with self._errors("listing sessions"):
            cutoff = f"({time.time() - _INDEX_GRACE_SECONDS}"
            yield from self._command(lambda c: c.zremrangebyscore(self._index, "-inf", cutoff))
            members = yield from self._command(lambda c: c.zrange(self._index, 0, -1))
            candidates = [text(m) for m in members]
            found: list[str] = []
            for i in range(0, len(candidates), _EXISTS_BATCH):
                chunk = candidates[i : i + _EXISTS_BATCH]
                exists = [self._exists(sid) for sid in chunk]
                counts = yield from self._command(pipelined(*exists))
                found += [sid for sid, n in zip(chunk, counts, strict=True) if n]
        return sorted(found)

    def _exists(self, session_id: str) -> Op:
        keys = SessionKeys.of(self._prefix, session_id)
        return lambda c: c.exists(keys.log, keys.state)

    @twin
    def close(self) -> Program[None]:
        """Stop using the store; close the sync client if :meth:`from_url` built it.

        In async code call :meth:`aclose` instead: it also closes the asyncio client.
        """
        was_closed, self._closed = self._closed, True
        if not self._owns_clients:
            return
        if self._async_client is not None:
            yield from call(_leave_open, self._async_client.aclose)
        if not was_closed and self._client is not None:
            self._client.close()  # drops its sockets; no round trip

    aappend = async_twin(append)
    aread = async_twin(read)
    aread_last = async_twin(read_last)
    acount = async_twin(count)
    alast_seq = async_twin(last_seq)
    aget_state = async_twin(get_state)
    aset_state = async_twin(set_state)
    astate_keys = async_twin(state_keys)
    adelete_state = async_twin(delete_state)
    aclear = async_twin(clear)
    aget_owner = async_twin(get_owner)
    aclaim_owner = async_twin(claim_owner)
    aset_owner = async_twin(set_owner)
    asessions = async_twin(sessions)
    aclose = async_twin(close)


def _sync_ready(store: RedisSessionStore) -> None:
    store._sync()


async def _async_ready(store: RedisSessionStore) -> None:
    store._check_open()


def _ignore(error: Exception) -> None:
    """Failure callback of the cluster retry loops: redis-py's cluster client has already
    dropped the failed connection and refreshed its slot map."""


def _leave_open() -> None:
    """Sync side of closing the asyncio client: sync code cannot close it (see ``aclose``)."""


def _check_timeouts(timeout: float, deadline: float | None) -> tuple[float, float]:
    """``from_url``'s ``timeout`` and ``deadline`` (``None``: twice the timeout), checked."""

    def seconds(value: object) -> float | None:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return None
        number = float(value)
        return number if math.isfinite(number) and number > 0 else None

    checked_timeout = seconds(timeout)
    if checked_timeout is None:
        msg = f"timeout must be a positive number of seconds, got {timeout!r}"
        raise ConfigurationError(msg)
    if deadline is None:
        return checked_timeout, 2 * checked_timeout
    checked_deadline = seconds(deadline)
    if checked_deadline is None or checked_deadline < checked_timeout:
        msg = (
            f"deadline must be a number of seconds at least as large as timeout "
            f"({checked_timeout:g}), got {deadline!r}; pass deadline=None for twice the timeout"
        )
        raise ConfigurationError(msg)
    return checked_timeout, checked_deadline
