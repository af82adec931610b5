"""Turns per second and per-turn latency of one ``MemoryService`` under 1 and 8 concurrent users.

Usage:
    .venv/bin/python bench/concurrency.py [--rounds 5] [--turns 48] [--concurrency 8]
        --base CHECKOUT [--variant NAME:VAR=VALUE[,VAR=VALUE]]... [--out FILE.json]

Each side is a separate process with one ``MemoryService`` on a temporary home (SQLite +
Qdrant Edge, the default local embedder, background consolidation on, no LLM), warmed up
once. A turn is ``build_context(question)`` plus ``process_interaction(question, answer)``
on the user's own session; every question is new (never embedded before). One run is
``--turns`` turns, split over 1 or ``--concurrency`` users, each user on its own thread
(``threads``) or in its own asyncio task on one event loop (``asyncio``).

The sides: ``ours`` (this checkout), ``base`` (``--base``, the code before, via
``PYTHONPATH``), and any ``--variant`` (this checkout with extra environment variables, e.g.
``omp2:OMP_NUM_THREADS=2``). All run in the same run, interleaved: every round runs every
setting on every side, the sides in a rotating order, one process at a time (the others wait
on their stdin). After each run the side drains its background consolidation (timed apart).

Reported per side and setting: turns/s (median of the rounds, with min-max), the p50 and
p95 per turn over all rounds, and the ratios the targets are stated in: turns/s with N users
over turns/s with one, p50 with N over p50 with one; and ours over base. Also the
"sustained" turns/s, which counts the drain of the background consolidation the turns
queued: a side that starves its consolidation while the users talk looks faster by turns/s
alone and leaves the work for later (``drain_s``). And the 1-minute load average at the
start of each round and at the end (its range is printed).

On a shared machine, more threads also take a larger share of the cores from other
processes: compare the sides with each other in the same run, not with runs on a quiet
machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# The bench helpers only (not the checkout's root): each side's agentmem comes from its
# own PYTHONPATH.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, log, peak_rss_mb, percentile, print_table, write_json

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

_WORDS = [
    "sailing", "taxes", "the garden", "a violin", "Lisbon", "bread", "chess", "a marathon",
    "the dentist", "jazz", "a new laptop", "the wedding", "knitting", "Kyoto", "the car",
]  # fmt: skip


# -- the worker process (one side) -------------------------------------------------------


class _Side:
    """One service and the turns it runs (in the side's own process)."""

    def __init__(self, home: str) -> None:
        from agentmem import MemoryService

        self.service = MemoryService.open(home)
        self.count = 0
        self.lock = threading.Lock()

    def question(self, user: str) -> tuple[str, str]:
        with self.lock:
            self.count += 1
            n = self.count
        word = _WORDS[n % len(_WORDS)]
        text = f"{user}, turn {n}: what did I say about {word} and the plan numbered {n * 7919}?"
        return text, f"You said {word} matters (note {n})."

    def turn(self, manager: Any, user: str) -> float:
        question, answer = self.question(user)
        start = time.perf_counter()
        manager.build_context(question)
        manager.process_interaction(question, answer)
        return time.perf_counter() - start

    async def aturn(self, manager: Any, user: str) -> float:
        question, answer = self.question(user)
        start = time.perf_counter()
        await manager.abuild_context(question)
        await manager.aprocess_interaction(question, answer)
        return time.perf_counter() - start

    def run(self, mode: str, users: int, turns: int, tag: str) -> dict[str, Any]:
        names = [f"{tag}-u{k}" for k in range(users)]
        managers = {u: self.service.manager(u, f"{u}-s") for u in names}
        per_user = [turns // users + (k < turns % users) for k in range(users)]
        start = time.perf_counter()
        if mode == "threads":

            def one(k: int) -> list[float]:
                u = names[k]
                return [self.turn(managers[u], u) for _ in range(per_user[k])]

            with ThreadPoolExecutor(users) as pool:
                lists = list(pool.map(one, range(users)))
        else:

            async def aone(k: int) -> list[float]:
                u = names[k]
                return [await self.aturn(managers[u], u) for _ in range(per_user[k])]

            async def all_users() -> list[list[float]]:
                return await asyncio.gather(*(aone(k) for k in range(users)))

            lists = asyncio.run(all_users())
        wall = time.perf_counter() - start
        start = time.perf_counter()
        self.service.wait_for_consolidation()
        drain = time.perf_counter() - start
        return {"wall_s": wall, "drain_s": drain, "latencies_s": [t for x in lists for t in x]}


def worker_main() -> int:
    """Serve run requests (JSON lines on stdin) until stdin closes."""
    with tempfile.TemporaryDirectory() as home:
        side = _Side(home)
        side.run("threads", 2, 8, "warm")  # load the model, open the stores, warm caches
        side.run("asyncio", 2, 8, "awarm")
        torch_threads = None
        if "torch" in sys.modules:
            torch_threads = sys.modules["torch"].get_num_threads()
        print(json.dumps({"ready": True, "torch_threads": torch_threads}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            result = side.run(request["mode"], request["users"], request["turns"], request["tag"])
            print(json.dumps(result), flush=True)
        result = {"peak_rss_mb": peak_rss_mb()}
        side.service.close()
    print(json.dumps(result), flush=True)
    return 0


# -- the driver ---------------------------------------------------------------------------


class _Process:
    def __init__(self, name: str, pythonpath: str, env: dict[str, str]) -> None:
        self.name = name
        full_env = {**os.environ, "PYTHONPATH": pythonpath, **env}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=full_env,
            cwd=ROOT,
        )
        self.hello = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"side {self.name!r} died (exit {self.proc.wait()})")
        out: dict[str, Any] = json.loads(line)
        return out

    def run(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        out = self._read()
        self.proc.wait()
        return out


def _sides(args: argparse.Namespace) -> list[tuple[str, str, dict[str, str]]]:
    ours = f"{ROOT / 'shared'}{os.pathsep}{ROOT}"
    base = Path(args.base)
    sides = [("base", f"{base / 'shared'}{os.pathsep}{base}", {}), ("ours", ours, {})]
    for spec in args.variant:
        name, _, assignments = spec.partition(":")
        env = dict(a.split("=", 1) for a in assignments.split(",") if a)
        sides.append((name, ours, env))
    return sides


def summarize(runs: list[dict[str, Any]], turns: int) -> dict[str, Any]:
    rates = [turns / r["wall_s"] for r in runs]
    sustained = [turns / (r["wall_s"] + r["drain_s"]) for r in runs]
    latencies = [t * 1000 for r in runs for t in r["latencies_s"]]
    return {
        "turns_per_s": statistics.median(rates),
        "turns_per_s_min": min(rates),
        "turns_per_s_max": max(rates),
        "sustained_turns_per_s": statistics.median(sustained),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "drain_s": statistics.median(r["drain_s"] for r in runs),
        "turns": len(latencies),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the tables; write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=48, help="turns per run (all users)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--base",
        help="a checkout of the code to compare with (e.g. `git worktree add /tmp/base main`)",
    )
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:VAR=VALUE")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "concurrency.json"))
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    if args.base is None:
        parser.error("--base is required: a checkout of the code to compare with")

    sides = _sides(args)
    procs = []
    for name, path, env in sides:
        log(f"starting side {name} ({env or 'no extra env'})")
        procs.append(_Process(name, path, env))
    settings = [(mode, users) for mode in ("threads", "asyncio") for users in (1, args.concurrency)]
    runs: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    loads: list[float] = []  # the 1-minute load average at the start of each round
    for rnd in range(args.rounds):
        loads.append(os.getloadavg()[0])
        log(f"round {rnd + 1} of {args.rounds} (load average {loads[-1]:.1f})")
        for i, (mode, users) in enumerate(settings):
            shift = (rnd + i) % len(procs)
            for proc in procs[shift:] + procs[:shift]:
                tag = f"r{rnd}-{mode}-{users}"
                result = proc.run(mode=mode, users=users, turns=args.turns, tag=tag)
                rate = args.turns / result["wall_s"]
                log(f"  {proc.name} {mode} x{users}: {rate:.1f} turns/s")
                runs.setdefault((proc.name, mode, users), []).append(result)
    loads.append(os.getloadavg()[0])
    closing = {proc.name: proc.close() for proc in procs}

    rows: list[dict[str, Any]] = []
    for proc in procs:
        for mode, users in settings:
            row = {"side": proc.name, "mode": mode, "users": users}
            row |= summarize(runs[(proc.name, mode, users)], args.turns)
            rows.append(row)
    by = {(r["side"], r["mode"], r["users"]): r for r in rows}
    ratios: list[dict[str, Any]] = []
    n = args.concurrency
    for proc in procs:
        for mode in ("threads", "asyncio"):
            one, many = by[(proc.name, mode, 1)], by[(proc.name, mode, n)]
            # Per round, to show the spread of the ratio, not only of each side.
            per_round = [
                (args.turns / b["wall_s"]) / (args.turns / a["wall_s"])
                for a, b in zip(runs[(proc.name, mode, 1)], runs[(proc.name, mode, n)], strict=True)
            ]
            ratios.append(
                {
                    "side": proc.name,
                    "mode": mode,
                    f"turns/s {n} / 1": many["turns_per_s"] / one["turns_per_s"],
                    "per-round min": min(per_round),
                    "per-round max": max(per_round),
                    f"p50 {n} / 1": many["p50_ms"] / one["p50_ms"],
                    "target turns/s >= 1.5": many["turns_per_s"] / one["turns_per_s"] >= 1.5,
                    "target p50 <= 4": many["p50_ms"] / one["p50_ms"] <= 4,
                }
            )
    versus: list[dict[str, Any]] = []
    for proc in procs:
        if proc.name == "base":
            continue
        for mode, users in settings:
            ours, base = by[(proc.name, mode, users)], by[("base", mode, users)]
            versus.append(
                {
                    "side": proc.name,
                    "mode": mode,
                    "users": users,
                    "turns/s x base": ours["turns_per_s"] / base["turns_per_s"],
                    "p50 x base": ours["p50_ms"] / base["p50_ms"],
                }
            )
    columns = ["side", "mode", "users", "turns_per_s", "turns_per_s_min", "turns_per_s_max"]
    columns += ["sustained_turns_per_s", "p50_ms", "p95_ms", "drain_s", "turns"]
    print_table(rows, columns)
    print()
    print_table(ratios, list(ratios[0]))
    print()
    print_table(versus, list(versus[0]))
    print(f"\nload average (1 min) during the run: {min(loads):.1f} to {max(loads):.1f}")
    report = {
        "benchmark": "concurrency",
        "rounds": args.rounds,
        "turns_per_run": args.turns,
        "concurrency": n,
        "sides": {
            p.name: {"env": env, "hello": p.hello}
            for p, (_, _, env) in zip(procs, sides, strict=True)
        },
        "rows": rows,
        "ratios": ratios,
        "versus_base": versus,
        "closing": closing,
        "load_average_1m": loads,
        "environment": environment(),
    }
    print(f"\nwrote {write_json(args.out, report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
