"""Memory tools for agents: save, search, update and delete memories, set working memory.

Every tool acts inside one user's scope; a tool can never reach another user's memories.
Given a :class:`~agentmem.MemoryService`, the tools resolve the user at call time from the
agent's runtime context (LangChain's ``ToolRuntime``: ``runtime.context.user_id``) and the
session from the run's ``thread_id``; given a :class:`~agentmem.MemoryManager`, they act for
its user and session. Errors an agent
can fix (bad id, empty content, importance out of range) come back to the model as the
tool's result, so it can retry; the tools are ``StructuredTool``s with sync and async forms.

Example:
    >>> tools = create_memory_tools(manager, permissions="read_only")  # doctest: +SKIP
    >>> [t.name for t in tools]  # doctest: +SKIP
    ['search_memory']
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from agentmem import MemoryManager, MemoryRecord, MemoryService
from agentmem.errors import AgentMemError, ConfigurationError, SessionOwnershipError
from langchain_agentmem._resolve import check_source, resolve_manager, thread_id_of

__all__ = ["READ_TOOLS", "TOOL_NAMES", "WRITE_TOOLS", "Permissions", "create_memory_tools"]

Permissions = Literal["read_write", "read_only"]
READ_TOOLS: tuple[str, ...] = ("search_memory",)
WRITE_TOOLS: tuple[str, ...] = (
    "save_memory",
    "update_memory",
    "delete_memory",
    "set_working_memory",
)
TOOL_NAMES: tuple[str, ...] = READ_TOOLS + WRITE_TOOLS

MemoryKind = Literal["semantic", "episodic", "procedural"]


def _guard(func: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> str:
        try:
            return func(*args, **kwargs)
        except SessionOwnershipError:
            raise  # not the agent's to fix: the run is refused, as by the middleware
        except AgentMemError as exc:
            raise ToolException(str(exc)) from exc

    return run


def _aguard(func: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
    @functools.wraps(func)
    async def run(*args: Any, **kwargs: Any) -> str:
        try:
            return await func(*args, **kwargs)
        except SessionOwnershipError:
            raise  # not the agent's to fix: the run is refused, as by the middleware
        except AgentMemError as exc:
            raise ToolException(str(exc)) from exc

    return run


def _describe(record: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": record.id,
        "content": record.content,
        "memory_type": record.memory_type,
        "importance": round(record.importance, 3),
        "created_at": record.created_at.isoformat(),
    }
    if score is not None:
        out["score"] = round(score, 4)
    return out


def _updated(memory_id: str, record: MemoryRecord, content: str | None) -> str:
    if content is None:  # the importance, in place
        return json.dumps(_describe(record))
    return json.dumps({"superseded": memory_id, **_describe(record)}, ensure_ascii=False)


def _deleted(memory_id: str, found: bool) -> str:
    return f"deleted {memory_id}" if found else f"no memory {memory_id} in this scope"


class _MemoryToolset:
    """The tool bodies, bound to one manager."""

    def __init__(self, manager: MemoryManager, search_k: int) -> None:
        self.m = manager
        self.search_k = search_k

    def save(
        self, content: str, memory_type: MemoryKind = "semantic", importance: float = 0.7
    ) -> str:
        decision = self.m.remember(content, memory_type, importance=importance)
        return json.dumps(
            {"action": decision.action, "id": decision.record.id, "reason": decision.reason}
        )

    async def asave(
        self, content: str, memory_type: MemoryKind = "semantic", importance: float = 0.7
    ) -> str:
        decision = await self.m.aremember(content, memory_type, importance=importance)
        return json.dumps(
            {"action": decision.action, "id": decision.record.id, "reason": decision.reason}
        )

    def search(self, query: str, k: int | None = None) -> str:
        hits = self.m.recall(query, k or self.search_k)
        return json.dumps([_describe(h.record, h.score) for h in hits], ensure_ascii=False)

    async def asearch(self, query: str, k: int | None = None) -> str:
        hits = await self.m.arecall(query, k or self.search_k)
        return json.dumps([_describe(h.record, h.score) for h in hits], ensure_ascii=False)

    def update(
        self, memory_id: str, content: str | None = None, importance: float | None = None
    ) -> str:
        if content is None and importance is None:
            return "nothing to update: pass content and/or importance"
        record = self.m.update_memory(memory_id, content=content, importance=importance)
        return _updated(memory_id, record, content)

    async def aupdate(
        self, memory_id: str, content: str | None = None, importance: float | None = None
    ) -> str:
        if content is None and importance is None:
            return "nothing to update: pass content and/or importance"
        record = await self.m.aupdate_memory(memory_id, content=content, importance=importance)
        return _updated(memory_id, record, content)

    def delete(self, memory_id: str) -> str:
        return _deleted(memory_id, self.m.delete_memory(memory_id))

    async def adelete(self, memory_id: str) -> str:
        return _deleted(memory_id, await self.m.adelete_memory(memory_id))

    def set_working(self, key: str, value: Any, ttl_seconds: float | None = None) -> str:
        self.m.update_working_memory(key, value, ttl=ttl_seconds)
        return f"working memory {key!r} set"

    async def aset_working(self, key: str, value: Any, ttl_seconds: float | None = None) -> str:
        await self.m.aupdate_working_memory(key, value, ttl=ttl_seconds)
        return f"working memory {key!r} set"


_DESCRIPTIONS = {
    "save_memory": (
        "Save a durable fact, preference or lesson about the user to long-term memory. "
        "Duplicates reinforce the existing memory; contradictions supersede it."
    ),
    "search_memory": "Search the user's long-term memories; returns id, content, type and score.",
    "update_memory": (
        "Change a memory by id: new content supersedes it (history is kept), "
        "or set a new importance in [0, 1]."
    ),
    "delete_memory": "Delete a long-term memory by id.",
    "set_working_memory": (
        "Set a working-memory variable for the current task (optionally expiring after "
        "ttl_seconds)."
    ),
}


def _per_call(
    name: str, kits: Callable[[Any], _MemoryToolset], runtime_type: Any
) -> tuple[Callable[..., str], Callable[..., Awaitable[str]]]:
    """Tool bodies that resolve their toolset from LangChain's injected ``runtime``.

    Each keeps the parameters (and so the schema the model sees) of the one-user body,
    plus a keyword-only ``runtime: ToolRuntime`` that LangChain injects and hides.
    """
    sync_name, async_name = _BODIES[name]
    template = getattr(_MemoryToolset, sync_name)
    params = list(inspect.signature(template).parameters.values())[1:]  # without self
    runtime = inspect.Parameter("runtime", inspect.Parameter.KEYWORD_ONLY)
    signature = inspect.Signature(
        [*params, runtime.replace(annotation=runtime_type)], return_annotation=str
    )
    hints = {**template.__annotations__, "runtime": runtime_type}

    def run(*args: Any, runtime: Any, **kwargs: Any) -> str:
        return str(getattr(kits(runtime), sync_name)(*args, **kwargs))

    async def arun(*args: Any, runtime: Any, **kwargs: Any) -> str:
        return str(await getattr(kits(runtime), async_name)(*args, **kwargs))

    for body in (run, arun):
        body.__signature__ = signature  # type: ignore[union-attr]
        body.__annotations__ = hints
        body.__name__ = name
    return run, arun


_BODIES: dict[str, tuple[str, str]] = {
    "save_memory": ("save", "asave"),
    "search_memory": ("search", "asearch"),
    "update_memory": ("update", "aupdate"),
    "delete_memory": ("delete", "adelete"),
    "set_working_memory": ("set_working", "aset_working"),
}


def create_memory_tools(
    memory: MemoryService | MemoryManager,
    *,
    permissions: Permissions = "read_write",
    include: Sequence[str] | None = None,
    search_k: int = 5,
    user_key: str = "user_id",
) -> list[BaseTool]:
    """Memory tools scoped to one user (the manager's, or the calling run's).

    Args:
        memory: A :class:`~agentmem.MemoryService`: each call acts for the user in the
            agent's runtime context (``user_key``) and the run's ``thread_id`` (needs
            ``langgraph``, as ``create_agent`` does). Or a
            :class:`~agentmem.MemoryManager`: every call acts for its user and session.
        permissions: ``"read_only"`` gives only ``search_memory``.
        include: Names of the tools to build (default: all the permissions allow; see
            :data:`TOOL_NAMES`).
        search_k: Default number of results of ``search_memory``.
        user_key: Name of the user id in the runtime context (service mode).

    Raises:
        ConfigurationError: Unknown tool name or permission, or a write tool requested
            with ``read_only`` permissions.
    """
    if permissions not in ("read_write", "read_only"):
        msg = f"permissions must be 'read_write' or 'read_only', got {permissions!r}"
        raise ConfigurationError(msg)
    allowed = TOOL_NAMES if permissions == "read_write" else READ_TOOLS
    names = tuple(include) if include is not None else allowed
    unknown = [n for n in names if n not in TOOL_NAMES]
    if unknown:
        msg = f"unknown memory tool(s) {unknown!r}; expected some of {list(TOOL_NAMES)!r}"
        raise ConfigurationError(msg)
    denied = [n for n in names if n not in allowed]
    if denied:
        msg = f"tool(s) {denied!r} write memory but permissions are {permissions!r}"
        raise ConfigurationError(msg)
    source = check_source(memory, "create_memory_tools")
    if isinstance(source, MemoryManager):
        kit = _MemoryToolset(source, search_k)
        bodies = {n: (getattr(kit, s), getattr(kit, a)) for n, (s, a) in _BODIES.items()}
    else:
        from langgraph.prebuilt import ToolRuntime

        def kits(runtime: Any) -> _MemoryToolset:
            manager = resolve_manager(
                source,
                context=getattr(runtime, "context", None),
                thread_id=thread_id_of(getattr(runtime, "config", None)),
                user_key=user_key,
            )
            return _MemoryToolset(manager, search_k)

        # Parameterized: a bare ToolRuntime makes pydantic expect a None context and warn
        # about every dataclass context it serializes.
        runtime_type = ToolRuntime[Any, Any]
        bodies = {n: _per_call(n, kits, runtime_type) for n in names}
    tools: list[BaseTool] = []
    for name in names:
        func, coro = bodies[name]
        tool = StructuredTool.from_function(
            func=_guard(func),
            coroutine=_aguard(coro),
            name=name,
            description=_DESCRIPTIONS[name],
            args_schema=None,
            infer_schema=True,
            handle_tool_error=True,
        )
        tools.append(tool)
    return tools
