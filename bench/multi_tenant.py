"""One agent, one ``MemoryService``, many users at once: the memory layer's cost per model call.

Usage:
    .venv/bin/python bench/multi_tenant.py [--users 50] [--turns 20] [--threads 8]
        [--out FILE.json]

A LangChain ``create_agent`` agent with one ``AgentMemoryMiddleware(service)`` serves
``--users`` users, ``--turns`` turns each (each user in its own ``thread_id``), once from
``--threads`` threads and once from asyncio tasks, on the embedded defaults (SQLite + Qdrant
Edge under a temporary home, the real local embedder, background consolidation on). The
model is scripted (it answers at once), so what is timed is the agent machinery and the
memory layer, not an LLM.

The baseline is the same agent without the middleware, in the same run. A timing middleware
outside both measures each model call (everything inside it: our middleware, the model); the
memory layer's overhead per call is ours minus the baseline's.

Checked in the same run: every request the model saw holds no other user's memory (each user
has a unique seeded fact), and every turn is in its session exactly once.
Reported: per-call p50/p95 ms (ours, baseline, overhead), turns/s, peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, log, peak_rss_mb, percentile, print_table, write_json


@dataclass
class Ctx:
    user_id: str


def fact(user: str) -> str:
    return f"{user} collects {user[::-1]}-brand fountain pens"


def question(user: str, turn: int) -> str:
    return f"I am {user}. Which pens do I collect? Question {turn} of today."


def build(service: Any, *, with_memory: bool) -> tuple[Any, list[float], list[list[Any]]]:
    """The agent, the list its per-call timings go to, and the requests the model saw."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from langchain_agentmem import AgentMemoryMiddleware

    timings: list[float] = []
    seen: list[list[BaseMessage]] = []
    lock = threading.Lock()

    class Answer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            with lock:
                seen.append(list(messages))
            return ChatResult(generations=[ChatGeneration(message=AIMessage("Noted."))])

    class Timing(AgentMiddleware):
        def wrap_model_call(
            self, request: ModelRequest[Any], handler: Callable[..., ModelResponse[Any]]
        ) -> ModelResponse[Any]:
            start = time.perf_counter()
            try:
                return handler(request)
            finally:
                timings.append((time.perf_counter() - start) * 1000)

        async def awrap_model_call(
            self,
            request: ModelRequest[Any],
            handler: Callable[..., Awaitable[ModelResponse[Any]]],
        ) -> ModelResponse[Any]:
            start = time.perf_counter()
            try:
                return await handler(request)
            finally:
                timings.append((time.perf_counter() - start) * 1000)

    middleware: list[Any] = [Timing()]
    if with_memory:
        middleware.append(AgentMemoryMiddleware(service, max_tokens=2000))
    agent = create_agent(
        Answer(), tools=[], middleware=middleware, context_schema=Ctx, system_prompt="Be brief."
    )
    return agent, timings, seen


def drive(agent: Any, users: list[str], turns: int, mode: str, threads: int) -> float:
    """Run every user's turns; return the wall time in seconds."""

    def payload(user: str, turn: int) -> tuple[dict[str, Any], dict[str, Any]]:
        inputs = {"messages": [{"role": "user", "content": question(user, turn)}]}
        options = {"context": Ctx(user_id=user), "config": {"configurable": {"thread_id": user}}}
        return inputs, options

    start = time.perf_counter()
    if mode == "threads":

        def run(user: str) -> None:
            for turn in range(turns):
                inputs, options = payload(user, turn)
                agent.invoke(inputs, **options)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(run, users))
    else:

        async def arun(user: str) -> None:
            for turn in range(turns):
                inputs, options = payload(user, turn)
                await agent.ainvoke(inputs, **options)

        async def all_users() -> None:
            await asyncio.gather(*(arun(u) for u in users))

        asyncio.run(all_users())
    return time.perf_counter() - start


def check(service: Any, users: list[str], turns: int, seen: list[list[Any]]) -> dict[str, int]:
    leaks = 0
    for request in seen:
        text = "\n".join(m.text for m in request)
        owner = next(u for u in users if f"I am {u}." in text)
        leaks += sum(1 for u in users if u != owner and fact(u) in text)
    lost = duplicated = 0
    for user in users:
        log_ = service.manager(user, user).short_term.get_log()
        asked = [m.content for m in log_ if m.role == "user"]
        for turn in range(turns):
            n = asked.count(question(user, turn))
            lost += n == 0
            duplicated += max(0, n - 1)
    return {"leaks": leaks, "lost": lost, "duplicated": duplicated}


def run_mode(args: argparse.Namespace, mode: str) -> list[dict[str, Any]]:
    from agentmem import MemoryService

    users = [f"user{i:03d}" for i in range(args.users)]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as home, MemoryService.open(home) as service:
        for user in users:
            service.manager(user, f"{user}-seed").remember(fact(user))
        results = {}
        for system, with_memory in (("baseline (no memory)", False), ("agentmem", True)):
            agent, timings, seen = build(service, with_memory=with_memory)
            log(f"{mode}: {system} ...")
            wall = drive(agent, users, args.turns, mode, args.threads)
            results[system] = (timings, wall, seen)
        service.manager(users[0], users[0]).wait_for_background()
        base_timings = results["baseline (no memory)"][0]
        seen = results["agentmem"][2]
        checks = check(service, users, args.turns, seen)
    base50, base95 = percentile(base_timings, 50), percentile(base_timings, 95)
    for system, (timings, wall_s, _) in results.items():
        p50, p95 = percentile(timings, 50), percentile(timings, 95)
        row = {
            "mode": mode,
            "system": system,
            "calls": len(timings),
            "p50 ms": p50,
            "p95 ms": p95,
            "turns/s": args.users * args.turns / wall_s,
            "x baseline p50": p50 / base50,
        }
        if system == "agentmem":
            row |= {"overhead p50 ms": p50 - base50, "overhead p95 ms": p95 - base95, **checks}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--out", default="bench/results/multi_tenant.json")
    args = parser.parse_args(argv)
    rows = [*run_mode(args, "threads"), *run_mode(args, "asyncio")]
    columns = [
        "mode",
        "system",
        "calls",
        "p50 ms",
        "p95 ms",
        "x baseline p50",
        "overhead p50 ms",
        "overhead p95 ms",
        "turns/s",
        "leaks",
        "lost",
        "duplicated",
    ]
    print_table(rows, columns)
    rss = peak_rss_mb()
    print(f"\npeak RSS: {rss:,.0f} MiB")
    write_json(args.out, {"environment": environment(), "rows": rows, "peak_rss_mb": rss})
    bad = [r for r in rows if r.get("leaks") or r.get("lost") or r.get("duplicated")]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
