"""Key names, Lua scripts and reply helpers of the Redis session store (private helper).

Every key of one session carries the session id as a Redis Cluster hash tag,
``{prefix}:{<session_id>}:<part>``, so the scripts below touch a single slot and run
atomically on a cluster node as well as on a single server.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import redis
import redis.asyncio

from agentmem.errors import StoreError
from agentmem.stores.base import StoredMessage
from agentmem.types import Message

__all__ = [
    "APPEND",
    "STATE",
    "LuaScript",
    "SessionKeys",
    "address",
    "parse_messages",
    "parse_state",
    "store_errors",
    "text",
]


def text(value: Any) -> str:
    """A reply value as ``str``, whether the client decodes responses or not."""
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_messages(rows: Sequence[Any]) -> list[StoredMessage]:
    """``ZRANGE ... WITHSCORES`` rows (member JSON, seq score) as stored messages."""
    return [StoredMessage(int(score), Message.from_json(member)) for member, score in rows]


def parse_state(raw: bytes | str | None) -> dict[str, Any] | None:
    return None if raw is None else dict(json.loads(raw))


def address(client: redis.Redis | redis.asyncio.Redis) -> str:
    """Where ``client`` connects, for error messages."""
    kwargs = client.get_connection_kwargs()
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


@contextmanager
def store_errors(where: str, action: str) -> Iterator[None]:
    """Re-raise redis-py errors as :class:`StoreError` saying what failed and what to check."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        msg = (
            f"cannot reach Redis at {where} while {action} ({exc}); check that the server "
            "is running and the URL is right (from_url clients retry with backoff)"
        )
        raise StoreError(msg) from exc
    except redis.RedisError as exc:
        msg = f"Redis at {where} failed while {action}: {exc}"
        raise StoreError(msg) from exc


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
    """

    seq: str
    log: str
    ids: str
    state: str

    @classmethod
    def of(cls, prefix: str, session_id: str) -> SessionKeys:
        base = f"{prefix}:{{{session_id}}}"
        return cls(f"{base}:seq", f"{base}:log", f"{base}:ids", f"{base}:state")


# KEYS: seq, log, ids, state. ARGV: ttl_ms (0 = none), then id_1, json_1, id_2, json_2, ...
# Returns the seq of every message, in argument order. A message whose id is already in the
# session (a retry of an append that was applied but whose reply was lost, or a repeat within
# the batch) is not stored again; its existing seq is returned.
APPEND = LuaScript.of(
    """
local ttl = tonumber(ARGV[1])
local n = (#ARGV - 1) / 2
local seqs, fresh, first_at = {}, {}, {}
for i = 1, n do
  local id = ARGV[2 * i]
  local known = redis.call('HGET', KEYS[3], id)
  if known then
    seqs[i] = tonumber(known)
  elseif first_at[id] then
    seqs[i] = -first_at[id]
  else
    first_at[id] = i
    fresh[#fresh + 1] = i
  end
end
if #fresh > 0 then
  local seq = redis.call('INCRBY', KEYS[1], #fresh) - #fresh
  local zargs, hargs = {}, {}
  for j, i in ipairs(fresh) do
    seq = seq + 1
    seqs[i] = seq
    zargs[#zargs + 1] = seq
    zargs[#zargs + 1] = ARGV[2 * i + 1]
    hargs[#hargs + 1] = ARGV[2 * i]
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
if ttl > 0 then
  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
end
return seqs
"""
)

# KEYS: seq, log, ids, state. ARGV: ttl_ms (0 = none), op ('set' | 'del'), field[, json].
STATE = LuaScript.of(
    """
local ttl = tonumber(ARGV[1])
if ARGV[2] == 'set' then
  redis.call('HSET', KEYS[4], ARGV[3], ARGV[4])
else
  redis.call('HDEL', KEYS[4], ARGV[3])
end
if ttl > 0 then
  for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ttl) end
end
return 1
"""
)
