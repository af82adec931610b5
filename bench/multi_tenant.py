"""One agent, one ``MemoryService``, many users at once: the memory layer's cost per model call.

Usage:
    .venv/bin/python bench/multi_tenant.py [--users 50] [--turns 20] [--threads 1,8]
        [--out FILE.json]

A LangChain ``create_agent`` agent with one ``AgentMemoryMiddleware(service)`` serves
``--users`` users, ``--turns`` turns each (each user in its own ``thread_id``), from each
number of ``--threads`` threads and, as many at a time, from asyncio tasks (a semaphore
lets that many users' tasks run at once), on the embedded defaults (SQLite + Qdrant
Edge under a temporary home, the real local embedder, background consolidation on). The
model is scripted (it answers at once), so what is timed is the agent machinery and the
memory layer, not an LLM.

The baseline is the same agent without the middleware, in the same run. A timing middleware
outside both measures each model call (everything inside it: our middleware, the model); the
memory layer's overhead per call is ours minus the baseline's.

Two consolidation settings run in the same run, each on its own threads (``thread_id``s),
the old one twice (two identical systems: their difference is the run's noise):
the old default (``consolidate_every_tokens=2000``: a short conversation never reaches it,
so nothing is consolidated while the users talk) and the default (every turn, in the
service's background worker, bursts of one session coalesced into one job). The systems
run round by round (one turn of every user), in a rotating order, so a change in the
machine's load reaches all of them alike. After each round of a system the benchmark waits
with ``service.wait_for_consolidation()``: the background work of a round runs during that
round's model calls (which is what is measured) and never during another system's. Reported
with it: the time spent waiting after the rounds ("drain s") and how many turns were in
long-term memory at the end ("consolidated"; an explicit ``consolidate()`` takes the rest).

Every question is new: its text names the user, the turn, the system, the mode and the
number at once, so no call finds its query embedding cached by an earlier identical question
(every service in a process shares the default embedder and its cache): each call pays its
query embedding, as a new question from a user does.

Checked in the same run: every request the model saw holds no other user's memory (each user
has a unique seeded fact), and every turn is in its session exactly once.
Reported: per-call p50/p95 ms (ours, baseline, overhead), turns/s, peak RSS, and for each
system and mode the ratios of the most concurrent setting to one at a time (turns/s and p50).
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


def question(user: str, turn: int, tag: str, mode: str, threads: int) -> str:
    """New text for every user, turn, system, mode and level: no call finds its query
    embedding cached by an earlier one (every service in the process shares the default
    embedder, hence its cache)."""
    run = f"{tag}, {mode} x{threads}"
    return f"I am {user}. Which pens do I collect? Question {turn} of today ({run})."


# The memory systems timed against the baseline: label, thread-id suffix, and the
# consolidation threshold their handles are built with (None: the default). The old default
# runs twice: how far apart two identical systems land is the noise of the run.
SYSTEMS: tuple[tuple[str, str, int | None], ...] = (
    ("agentmem, old default (every 2,000 tokens)", "old", 2000),
    ("agentmem, default (every turn, background)", "new", None),
    ("agentmem, old default again (noise control)", "old2", 2000),
)


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


def drive(agent: Any, users: list[str], turns: range, mode: str, threads: int, tag: str) -> float:
    """Run these turns of every user (thread ``{user}-{tag}``); return the wall time in s."""

    def payload(user: str, turn: int) -> tuple[dict[str, Any], dict[str, Any]]:
        inputs = {
            "messages": [{"role": "user", "content": question(user, turn, tag, mode, threads)}]
        }
        thread = {"configurable": {"thread_id": f"{user}-{tag}"}}
        return inputs, {"context": Ctx(user_id=user), "config": thread}

    start = time.perf_counter()
    if mode == "threads":

        def run(user: str) -> None:
            for turn in turns:
                inputs, options = payload(user, turn)
                agent.invoke(inputs, **options)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(run, users))
    else:

        async def arun(user: str, gate: asyncio.Semaphore) -> None:
            async with gate:
                for turn in turns:
                    inputs, options = payload(user, turn)
                    await agent.ainvoke(inputs, **options)

        async def all_users() -> None:
            gate = asyncio.Semaphore(threads)
            await asyncio.gather(*(arun(u, gate) for u in users))

        asyncio.run(all_users())
    return time.perf_counter() - start


def check(
    service: Any,
    users: list[str],
    turns: int,
    seen: list[list[Any]],
    tag: str,
    run: tuple[str, int],
) -> dict[str, int]:
    leaks = 0
    for request in seen:
        text = "\n".join(m.text for m in request)
        owner = next(u for u in users if f"I am {u}." in text)
        leaks += sum(1 for u in users if u != owner and fact(u) in text)
    lost = duplicated = left = 0
    for user in users:
        manager = service.manager(user, f"{user}-{tag}")
        log_ = manager.short_term.get_log()
        asked = [m.content for m in log_ if m.role == "user"]
        for turn in range(turns):
            n = asked.count(question(user, turn, tag, *run))
            lost += n == 0
            duplicated += max(0, n - 1)
        # What an explicit run still finds: messages the background never consolidated.
        left += manager.consolidate().messages
    consolidated = len(users) * turns - left // 2
    return {"leaks": leaks, "lost": lost, "duplicated": duplicated, "consolidated": consolidated}


def run_mode(args: argparse.Namespace, mode: str, threads: int) -> list[dict[str, Any]]:
    from agentmem import MemoryService

    users = [f"user{i:03d}" for i in range(args.users)]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as home, MemoryService.open(home) as service:
        for user in users:
            service.manager(user, f"{user}-seed").remember(fact(user))
        default_threshold = service.consolidate_every_tokens
        # Untimed warm-up of the memory path (graph, tokenizer, model caches) on threads of
        # its own, so the first system timed does not pay it.
        warm, _, _ = build(service, with_memory=True)
        drive(warm, users, range(1), mode, threads, "warm")
        service.wait_for_consolidation()
        systems = [("baseline (no memory)", "base", None), *SYSTEMS]
        # Each system's handles are built with its threshold: a copy of the service over
        # the same stores and consolidation workers.
        views = {
            tag: service.with_settings(consolidate_every_tokens=threshold or default_threshold)
            for _, tag, threshold in systems
        }
        agents = {tag: build(views[tag], with_memory=tag != "base") for _, tag, _ in systems}
        wall = dict.fromkeys(agents, 0.0)
        drain = dict.fromkeys(agents, 0.0)
        # Round by round (one turn of every user), the systems take turns, in a rotating
        # order, so a change in the machine's load reaches all of them alike. After each
        # round of a system, its background consolidation is drained (and timed): what it
        # costs the model calls is measured while it runs, never in another system's round.
        for turn in range(args.turns):
            log(f"{mode} x{threads}: round {turn + 1} of {args.turns}")
            shift = turn % len(systems)
            for _, tag, _ in systems[shift:] + systems[:shift]:
                agent = agents[tag][0]
                wall[tag] += drive(agent, users, range(turn, turn + 1), mode, threads, tag)
                start = time.perf_counter()
                if not service.wait_for_consolidation(timeout=3600):
                    raise SystemExit("consolidation did not drain within an hour")
                drain[tag] += time.perf_counter() - start
        base_timings = agents["base"][1]
        base_row = row_of(mode, systems[0][0], base_timings, wall["base"], base_timings, args)
        rows.append({"threads": threads, **base_row})
        for system, tag, _ in SYSTEMS:
            _, timings, seen = agents[tag]
            row = {
                "threads": threads,
                **row_of(mode, system, timings, wall[tag], base_timings, args),
            }
            row |= {
                "drain s": drain[tag],
                **check(views[tag], users, args.turns, seen, tag, (mode, threads)),
            }
            rows.append(row)
    return rows


def row_of(
    mode: str,
    system: str,
    timings: list[float],
    wall_s: float,
    base_timings: list[float],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One table row: per-call percentiles, their ratio and difference to the baseline."""
    p50, p95 = percentile(timings, 50), percentile(timings, 95)
    base50, base95 = percentile(base_timings, 50), percentile(base_timings, 95)
    row: dict[str, Any] = {
        "mode": mode,
        "system": system,
        "calls": len(timings),
        "p50 ms": p50,
        "p95 ms": p95,
        "turns/s": args.users * args.turns / wall_s,
        "x baseline p50": p50 / base50,
    }
    if timings is not base_timings:
        row |= {"overhead p50 ms": p50 - base50, "overhead p95 ms": p95 - base95}
    return row


def scaling_rows(rows: list[dict[str, Any]], low: int, high: int) -> list[dict[str, Any]]:
    """Per mode and system: turns/s and p50 with ``high`` users at once over ``low``."""
    if low == high:
        return []
    by = {(r["mode"], r["threads"], r["system"]): r for r in rows}
    out: list[dict[str, Any]] = []
    for (mode, threads, system), one in by.items():
        many = by.get((mode, high, system))
        if threads != low or many is None:
            continue
        out.append(
            {
                "mode": mode,
                "system": system,
                f"turns/s {high} / {low}": many["turns/s"] / one["turns/s"],
                f"p50 {high} / {low}": many["p50 ms"] / one["p50 ms"],
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument(
        "--threads", default="1,8", help="users served at once: threads, and asyncio tasks"
    )
    parser.add_argument("--out", default="bench/results/multi_tenant.json")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.threads.split(",") if n.strip()]
    rows = [
        *(r for mode in ("threads", "asyncio") for n in levels for r in run_mode(args, mode, n))
    ]
    columns = [
        "mode",
        "threads",
        "system",
        "calls",
        "p50 ms",
        "p95 ms",
        "x baseline p50",
        "overhead p50 ms",
        "overhead p95 ms",
        "turns/s",
        "drain s",
        "consolidated",
        "leaks",
        "lost",
        "duplicated",
    ]
    print_table(rows, columns)
    scaling = scaling_rows(rows, min(levels), max(levels))
    if scaling:
        print()
        print_table(scaling, list(scaling[0]))
    rss = peak_rss_mb()
    print(f"\npeak RSS: {rss:,.0f} MiB")
    report = {"environment": environment(), "rows": rows, "scaling": scaling, "peak_rss_mb": rss}
    write_json(args.out, report)
    bad = [r for r in rows if r.get("leaks") or r.get("lost") or r.get("duplicated")]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
