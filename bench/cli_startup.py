"""How fast the ``agentmem`` command answers: ``--help``, ``stats`` and every user mistake.

Usage:
    .venv/bin/python bench/cli_startup.py [--runs 10] [--sizes 100,10000,100000]
        [--home DIR] [--base CHECKOUT] [--out bench/results/cli_startup.json]

Each command runs once (a warm-up), then ``--runs`` rounds run every command once each,
interleaved, as a fresh process, the way a user runs it: wall time from spawn to exit,
reported as median / min / max and as the ratio of its median to the median of ``python -c
pass`` measured in the same run (the interpreter's own start), and as the ratio to the
median of ``python -c "import torch"`` (``x_torch``; the goal for ``stats`` on a
100,000-memory home is at most 0.5). Peak RSS and CPU time (user + system: ``cpu_ms``,
and ``cpu_x_torch`` against ``import torch``'s, a figure other jobs on the machine sway
less than wall time) come from ``wait4`` (this process stays small, so a child's figure is
its own). Two reference rows show what the lazy path avoids:
``python -c "import torch"`` and ``import sentence_transformers`` (``--torch-only``: the
first only). ``stats`` reads the census the store's last clean close wrote
(``agentmem.stores.qdrant._edge_census``); the ``no census`` row removes it before each run
(``sh -c 'rm -f ... && exec agentmem ...'``: the shell is replaced, so the figures are the
command's), as after a crash or on a store an older agentmem wrote: the store is loaded and
counts, and its close writes the census again. ``--base CHECKOUT`` adds, for each home, a
``base:`` row of ``stats`` run by the code of that checkout (its ``PYTHONPATH``) in the same
rounds, on a copy of the home (each version rewrites the manifest in its own format):
before and after in one run.

The homes are bulk-loaded first through the public API (``LongTermMemory.store_records``,
one store with no index build: the same home for every version of the code) with the tests'
deterministic hashing embedder (384 dimensions), so building them loads no model; ``stats`` on
them reads the real Qdrant Edge store. ``--home DIR`` times ``stats`` on one home kept across
runs (and across versions of the code) instead: the largest of ``--sizes``, built in ``DIR``
by the first run that finds no store there. The mistakes are the CLI error table of the tests
(missing file, directory, non-UTF-8, malformed line, wrong format for ``import``,
``demo --max-tokens 0``, unknown user): each must exit 1, and its time is the time to the
error. No timed assertion: this prints numbers.

The children run as an installed package does: with compiled bytecode. They may write it
(``PYTHONDONTWRITEBYTECODE`` is dropped), into a cache directory of the run
(``PYTHONPYCACHEPREFIX``), which the warm-up run fills; without it every run would compile
agentmem's sources again (a third of a second on a slow machine).

Where the time of ``stats`` goes (``stats_phases``, per home, medians of ``--runs``): in a
child process under ``-X importtime``, from the first import of agentmem to the end of the
command: the imports (every module, as ``-X importtime`` counts them), opening the Qdrant
Edge store (``QdrantEdgeStore.__init__``: loading its segments), closing it (``close``:
flush and shut the shard) and the rest (arguments, the counts, disk usage). The
interpreter's own start and exit are not in it (the ``python -c pass`` row is the start).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make `bench` importable

from bench._common import environment, log, parse_sizes, print_table, write_json  # noqa: E402
from tests.fake_embedder import HashingEmbedder  # noqa: E402

__all__ = ["main", "run_command"]

DEFAULT_OUT = ROOT / "bench" / "results" / "cli_startup.json"
USERS = 10


def build_home(home: Path, memories: int) -> None:
    """``memories`` memories of ``alice`` plus 100 of each of the other users, bulk-loaded
    through one store that builds no index (what an import leaves before the store indexes
    it by itself): the same home for every version of the code."""
    from agentmem.long_term import LongTermMemory
    from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore

    embedder = HashingEmbedder(384)
    store = QdrantEdgeStore(
        home / "long_term", dimension=embedder.dimension, auto_index=AutoIndex(enabled=False)
    )
    for u in range(USERS):
        user = "alice" if u == 0 else f"user{u:02d}"
        count = memories if u == 0 else 100
        memory = LongTermMemory(store=store, embedder=embedder, user_id=user, on_close=_keep)
        try:
            for start in range(0, count, 1000):
                records = [
                    memory.new_record(
                        f"{user} memory {i}: prefers tabs, visited city {i % 97}",
                        "semantic" if i % 3 else "episodic",
                        subtype="preference" if i % 2 else "fact",
                    )
                    for i in range(start, min(count, start + 1000))
                ]
                memory.store_records(records)
        finally:
            memory.close()
    store.close()


def _keep() -> None:
    """The store outlives each user's memory (closed once, at the end)."""


def _agentmem() -> list[str]:
    script = Path(sys.executable).with_name("agentmem")
    if script.exists():
        return [str(script)]
    found = shutil.which("agentmem")
    return [found] if found else [sys.executable, "-m", "agentmem.cli"]


def run_command(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str]
) -> tuple[float, int, float, float]:
    """One run: (wall seconds, exit status, peak RSS in MiB, CPU seconds: user + system)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, proc.returncode, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


Step = tuple[str, list[str], int, dict[str, str]]  # name, argv, expected status, env


def _measure(plan: Sequence[Step], *, runs: int, cwd: Path) -> list[dict[str, Any]]:
    """Each command of ``plan`` once (a warm-up: the file cache), then ``runs`` rounds of
    all of them, interleaved: a load that comes and goes weighs on every row alike."""
    for name, argv, _, env in plan:
        log(f"{name} ...")
        run_command(argv, cwd=cwd, env=env)
    samples: list[list[tuple[float, int, float, float]]] = [[] for _ in plan]
    for round_ in range(runs):
        log(f"round {round_ + 1}/{runs} ...")
        for (_, argv, _, env), done in zip(plan, samples, strict=True):
            done.append(run_command(argv, cwd=cwd, env=env))
    rows = []
    for (name, _, expect, _), done in zip(plan, samples, strict=True):
        codes = {code for _, code, _, _ in done}
        if codes != {expect}:
            msg = f"{name}: exit status {sorted(codes)}, expected {expect}"
            raise SystemExit(msg)
        times = [elapsed * 1000 for elapsed, _, _, _ in done]
        rows.append(
            {
                "command": name,
                "runs": runs,
                "median_ms": statistics.median(times),
                "min_ms": min(times),
                "max_ms": max(times),
                "cpu_ms": statistics.median(cpu * 1000 for _, _, _, cpu in done),
                "peak_rss_mib": statistics.median(peak for _, _, peak, _ in done),
                "exit": expect,
            }
        )
    return rows


def _inputs(work: Path) -> dict[str, Path]:
    chat = '{"role": "user", "content": "I indent with tabs"}\n'
    files = {
        "directory": work / "a-directory",
        "latin1": work / "latin1.jsonl",
        "malformed": work / "malformed.jsonl",
        "chat": work / "chat.jsonl",
    }
    files["directory"].mkdir()
    files["latin1"].write_bytes(chat.encode() + b'{"role": "user", "content": "caf\xe9"}\n')
    files["malformed"].write_text(chat * 2 + '{"role": "user", "content": \n', encoding="utf-8")
    files["chat"].write_text(chat, encoding="utf-8")
    return files


# One `agentmem stats` run (under -X importtime) timing the store's open and close.
_PHASES = """
import io, json, sys, time
sys.stderr.write("phases: start\\n")
t0 = time.perf_counter()
import agentmem.cli
import agentmem.stores.qdrant.edge as edge
spent = {"open": 0.0, "close": 0.0}

def timed(phase, method):
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[phase] += time.perf_counter() - start
    return run

edge.QdrantEdgeStore.__init__ = timed("open", edge.QdrantEdgeStore.__init__)
edge.QdrantEdgeStore.close = timed("close", edge.QdrantEdgeStore.close)
sys.stdout = io.StringIO()
code = agentmem.cli.main(["--home", sys.argv[1], "stats", "--user", "alice"])
total = time.perf_counter() - t0
sys.stdout = sys.__stdout__
print(json.dumps({"code": code, "total": total, **spent}))
"""


def _import_seconds(stderr: str) -> float:
    """The time ``-X importtime`` reports for the imports after the start marker."""
    seconds = 0.0
    for line in stderr.split("phases: start", 1)[-1].splitlines():
        if line.startswith("import time:") and "|" in line:
            own = line.removeprefix("import time:").split("|")[0].strip()
            seconds += int(own) / 1e6 if own.isdigit() else 0.0
    return seconds


def stats_phases(home: Path, *, runs: int, cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """Where ``stats`` on ``home`` spends its time, after the interpreter has started:
    imports (all of them, as ``-X importtime`` counts), opening and closing the Qdrant
    Edge store, and the rest (the counts, disk usage); medians of ``runs`` children."""
    samples = []
    for _ in range(runs + 1):  # the first is a warm-up
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", _PHASES, str(home)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        sample = json.loads(done.stdout.splitlines()[-1])
        if sample["code"] != 0:
            raise SystemExit(f"stats on {home} failed: {done.stderr[-2000:]}")
        imports = _import_seconds(done.stderr)
        rest = sample["total"] - imports - sample["open"] - sample["close"]
        samples.append(
            {
                "total_ms": sample["total"] * 1000,
                "imports_ms": imports * 1000,
                "open_ms": sample["open"] * 1000,
                "close_ms": sample["close"] * 1000,
                "rest_ms": rest * 1000,
            }
        )
    return {key: statistics.median(s[key] for s in samples[1:]) for key in samples[0]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the homes, time every command; returns the JSON report."""
    py, cli = sys.executable, _agentmem()
    work = Path(tempfile.mkdtemp(prefix="agentmem-cli-bench-"))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AGENTMEM_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")  # compiled once, like an install
    homes = {}
    sizes = [max(args.sizes)] if args.home else args.sizes
    for size in sizes:
        homes[size] = args.home or work / f"home-{size}"
        if (homes[size] / "long_term").exists():
            log(f"reusing {homes[size]} (built with {size:,} memories of alice)")
            continue
        log(f"building a home with {size:,} memories of alice (+{USERS - 1} users x 100) ...")
        # In a child process: this one stays small, so its children's peak RSS is their own
        # (a forked child starts with its parent's resident pages).
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
            "from bench.cli_startup import build_home; "
            f"build_home(Path({str(homes[size])!r}), {size})"
        )
        subprocess.run([py, "-c", code], env=env, check=True)
    files = _inputs(work)
    small = homes[min(homes)]
    fresh = ["--home", str(work / "fresh-home")]
    plan: list[Step] = [
        ("python -c pass (baseline)", [py, "-c", "pass"], 0, env),
        ("python -c 'import agentmem'", [py, "-c", "import agentmem"], 0, env),
        ("agentmem --help", [*cli, "--help"], 0, env),
    ]
    for size, home in homes.items():
        name = f"agentmem stats --user alice ({size:,} memories)"
        stats = ["--home", str(home), "stats", "--user", "alice"]
        plan.append((name, [*cli, *stats], 0, env))
        # The same with the census gone before each run (a store an older agentmem wrote,
        # or the first stats after a crash): counted by the loaded store, whose close
        # writes the census again.
        census = home / "long_term" / "agentmem-census.json"
        no_census = ["sh", "-c", 'rm -f "$0" && exec "$@"', str(census), *cli, *stats]
        plan.append((f"{name}, no census", no_census, 0, env))
        if args.base is not None:  # the code before, from its checkout, in the same rounds
            base_path = f"{args.base / 'shared'}{os.pathsep}{args.base}"
            base_env = {**env, "PYTHONPATH": base_path}
            # On a copy: each version rewrites the manifest in its own format at close.
            base_home = work / f"base-home-{size}"
            if not base_home.exists():
                subprocess.run(["cp", "-r", "--sparse=always", str(home), str(base_home)])
            base_stats = ["--home", str(base_home), *stats[2:]]
            plan.append((f"base: {name}", [py, "-m", "agentmem.cli", *base_stats], 0, base_env))
    mistakes: list[tuple[str, list[str]]] = [
        ("missing file (ingest)", ["ingest", str(work / "missing.jsonl"), "--user", "bob"]),
        ("directory (ingest)", ["ingest", str(files["directory"]), "--user", "bob"]),
        ("non-UTF-8 (ingest)", ["ingest", str(files["latin1"]), "--user", "bob"]),
        ("malformed line (ingest)", ["ingest", str(files["malformed"]), "--user", "bob"]),
        ("wrong format (import)", ["import", str(files["chat"]), "--user", "bob"]),
        ("demo --max-tokens 0", ["demo", "--max-tokens", "0"]),
    ]
    for name, argv in mistakes:
        plan.append((f"error: {name}", [*cli, *fresh, *argv], 1, env))
    unknown = [*cli, "--home", str(small), "stats", "--user", "nobody"]
    plan.append(("error: unknown user (stats)", unknown, 1, env))
    if not args.no_reference:
        plan.append(("reference: python -c 'import torch'", [py, "-c", "import torch"], 0, env))
        if not args.torch_only:
            plan.append(
                (
                    "reference: python -c 'import sentence_transformers'",
                    [py, "-c", "import sentence_transformers"],
                    0,
                    env,
                )
            )
    load_before = os.getloadavg()
    rows = _measure(plan, runs=args.runs, cwd=work)
    base = rows[0]["median_ms"]
    torch = next((r for r in rows if "import torch" in r["command"]), None)
    for row in rows:
        row["x_python"] = row["median_ms"] / base
        if torch is not None:  # the goal of `stats` on a big home: at most 0.5x of it
            row["x_torch"] = row["median_ms"] / torch["median_ms"]
            row["cpu_x_torch"] = row["cpu_ms"] / torch["cpu_ms"]
    phases = []
    for size, home in homes.items():
        log(f"phases of stats ({size:,} memories) ...")
        phases.append({"memories": size, **stats_phases(home, runs=args.runs, cwd=work, env=env)})
    shutil.rmtree(work, ignore_errors=True)
    return {
        "config": {"runs": args.runs, "sizes": sizes, "home": args.home and str(args.home)},
        # 1-minute load average when the timed runs start and end (a busy machine is slower)
        "load_average": [load_before[0], os.getloadavg()[0]],
        "env": environment(),
        "rows": rows,
        "stats_phases": phases,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command")
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[100, 10_000, 100_000],
        help="memories of alice per home",
    )
    parser.add_argument(
        "--home",
        type=Path,
        help="time stats on this home (the largest of --sizes; built here when missing, "
        "then kept) instead of building homes for the run",
    )
    parser.add_argument(
        "--base",
        type=Path,
        help="a checkout of the code before (e.g. `git worktree add /tmp/base main`): its "
        "stats rows run in the same rounds",
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the torch rows")
    parser.add_argument(
        "--torch-only", action="store_true", help="of the references, only import torch"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    report = run(args)
    print()
    print_table(
        report["rows"],
        [
            "command",
            "runs",
            "median_ms",
            "min_ms",
            "max_ms",
            "x_python",
            "x_torch",
            "cpu_ms",
            "cpu_x_torch",
            "peak_rss_mib",
            "exit",
        ],
    )
    print()
    print_table(
        report["stats_phases"],
        ["memories", "total_ms", "imports_ms", "open_ms", "close_ms", "rest_ms"],
    )
    write_json(args.out, report)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
