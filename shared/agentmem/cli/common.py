"""What the command line's commands share: argument checks, opening the stores, the LLM
status line and disk usage (private).

The checks here run before any store is opened or any model is loaded; each raises an
:class:`~agentmem.errors.AgentMemError` whose one-line message names the option or file and
the fix.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from agentmem.cli.progress import TransientStatus
from agentmem.errors import ConfigurationError, InvalidValueError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from agentmem.backends import BackendConfig
    from agentmem.cli.embedder import DeferredEmbedder
    from agentmem.controller.config import ManagerSettings
    from agentmem.controller.manager import MemoryManager
    from agentmem.llm import ChatModel
    from agentmem.long_term import LongTermMemory

__all__ = [
    "DEFAULT_DIMENSION",
    "NO_LLM_STATUS",
    "atomic_writer",
    "check_home",
    "check_positive",
    "check_query",
    "check_session",
    "check_user",
    "check_user_memories",
    "deferred_embedder",
    "disk_usage",
    "format_bytes",
    "llm_from_environment",
    "open_long_term",
    "open_manager",
    "require_memories_home",
    "require_user_memories",
    "resolve_config",
]

NO_LLM_STATUS = (
    "No LLM configured (set OPENAI_API_KEY or OPENAI_BASE_URL to use one): "
    "no summaries; conversation rounds are stored as episodes."
)
"""The status line (on stderr) of commands that would use an LLM when none is configured."""

DEFAULT_DIMENSION = 384
"""Vector size of all-MiniLM-L6-v2, the default model (its weights are pinned by sha256):
the stores open with it before (or without) loading the model (see
:mod:`agentmem.cli.embedder`)."""


def check_user(args: argparse.Namespace) -> str:
    """The ``--user`` id, checked like every scope id.

    Example:
        >>> check_user(argparse.Namespace(user="alice"))
        'alice'
    """
    from agentmem._util.session_ids import validate_session_id

    return validate_session_id(args.user, what="--user")


def check_session(value: str | None, option: str = "--session") -> str | None:
    """``--session``, if given, checked like every session id."""
    if value is None:
        return None
    from agentmem._util.session_ids import validate_session_id

    return validate_session_id(value, what=option)


def check_positive(value: float | None, option: str, *, integer: bool = True) -> None:
    """Refuse a ``--max-tokens 0``-like value: ``option`` must be > 0 (finite)."""
    if value is None:
        return
    if not math.isfinite(value) or value <= 0:
        kind = "a whole number" if integer else "a number"
        msg = f"{option} must be {kind} greater than 0, got {value!r}"
        raise ConfigurationError(msg)


def check_query(query: str) -> str:
    """A non-blank query."""
    if not query.strip():
        msg = 'the query is empty; pass some text to search for, e.g. "tabs or spaces?"'
        raise InvalidValueError(msg)
    return query


def resolve_config(args: argparse.Namespace) -> BackendConfig:
    """Where the stores are: ``--memory-url``, ``--session-url`` and ``--home``, else the
    environment (see :mod:`agentmem.backends`)."""
    from agentmem.backends import BackendConfig

    return BackendConfig.resolve(
        args.home,
        memory_url=getattr(args, "memory_url", None),
        session_url=getattr(args, "session_url", None),
    )


def check_home(config: BackendConfig) -> None:
    """Refuse a home that exists but is not a directory."""
    if config.home.exists() and not config.home.is_dir():
        msg = f"--home {config.home} is a file, not a directory; pass a directory"
        raise ConfigurationError(msg)


def require_memories_home(config: BackendConfig, user: str) -> None:
    """For reading commands: refuse a home that holds no memories at all (nothing created)."""
    check_home(config)
    if config.memory_path is not None and not config.memory_path.is_dir():
        msg = (
            f"no memories in {config.describe_memories()} yet: store some with `agentmem ingest "
            f"FILE --user {user}` (or run `agentmem demo`), or pass the --home that holds them"
        )
        raise InvalidValueError(msg)


def require_user_memories(memory: LongTermMemory, where: Path | str) -> int:
    """How many memories the user has (history included); refuse a user with none."""
    from agentmem.long_term import RecordFilter

    count = memory.count_memories(RecordFilter(include_history=True))
    check_user_memories(count, memory.scope.user_id, where)
    return count


def check_user_memories(count: int, user: str, where: Path | str) -> None:
    """Refuse a user with no memories (``count``, history included) in ``where``."""
    if count == 0:
        msg = (
            f"user {user!r} has no memories in {where}; check --user "
            "(ids are case-sensitive) or --home"
        )
        raise InvalidValueError(msg)


def deferred_embedder(**kwargs: Any) -> DeferredEmbedder:
    """The default embedder, loaded on first use with a status line on a terminal."""
    from agentmem.cli.embedder import DeferredEmbedder  # here: it imports the embeddings

    return DeferredEmbedder(
        loading=lambda: TransientStatus("loading the embedding model (all-MiniLM-L6-v2)"),
        **kwargs,
    )


def open_long_term(config: BackendConfig, user: str, embedder: DeferredEmbedder) -> LongTermMemory:
    """The user's long-term memory on the configured store (no model is loaded)."""
    from agentmem.long_term import LongTermMemory

    return LongTermMemory.open(
        user_id=user, home=config.home, embedder=embedder, **config.as_options()
    )


def open_manager(
    config: BackendConfig,
    user: str,
    embedder: DeferredEmbedder,
    llm: ChatModel | None,
    *,
    session: str | None = None,
    **settings: Unpack[ManagerSettings],
) -> MemoryManager:
    """A manager of ``user`` (in ``session``, default a new one) on the configured stores
    (no model is loaded); ``settings`` as for ``MemoryManager.open``."""
    from agentmem.controller.manager import MemoryManager

    return MemoryManager.open(
        user_id=user,
        session_id=session,
        home=config.home,
        llm=llm,
        embedder=embedder,
        **settings,
        **config.as_options(),
    )


def llm_from_environment(err: TextIO) -> ChatModel | None:
    """The OpenAI-compatible LLM of the environment, or ``None``; one status line on ``err``."""
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        err.write(NO_LLM_STATUS + "\n")
        return None
    from agentmem.llm.openai import OpenAIChatModel

    model = os.environ.get("AGENTMEM_MODEL", "gpt-4o-mini")
    err.write(f"LLM: {model} via OpenAI-compatible API.\n")
    return OpenAIChatModel(model=model)


def disk_usage(root: Path) -> tuple[int, int]:
    """Bytes allocated on disk (blocks, as ``du`` counts) and apparent size, under ``root``.

    Sparse files (Qdrant preallocates large ones) count by the blocks they really use;
    hard links count once; symbolic links are not followed. Where the platform reports no
    blocks (Windows), the apparent size stands for both.

    Example:
        >>> import tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> with open(root / "sparse", "wb") as f:
        ...     _ = f.seek(50_000_000); _ = f.write(b"x")
        >>> allocated, apparent = disk_usage(root)
        >>> apparent > 50_000_000 > allocated
        True
    """
    allocated = apparent = 0
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            info = path.lstat()
        except OSError:
            continue  # removed meanwhile
        key = (info.st_dev, info.st_ino)
        if key in seen:
            continue
        seen.add(key)
        blocks = getattr(info, "st_blocks", None)
        allocated += blocks * 512 if blocks is not None else info.st_size
        apparent += info.st_size
        if stat.S_ISDIR(info.st_mode):
            try:
                stack.extend(path.iterdir())
            except OSError:
                continue
    return allocated, apparent


def format_bytes(size: int) -> str:
    """``844.0 KB``, ``255.3 MB`` (powers of 1000, as ``du --si``).

    Example:
        >>> format_bytes(864_256), format_bytes(255_300_000)
        ('864.3 KB', '255.3 MB')
    """
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError  # pragma: no cover


@contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """Write ``path`` through a temporary file renamed into place at the end: on any error
    the target is left as it was and the temporary file is removed."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8", newline="\n") as handle:
            yield handle
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
