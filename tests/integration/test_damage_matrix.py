"""The damage matrix: each file kind of an embedded home x {removed, truncated, altered}.

One small pristine home (a Qdrant Edge store and a SQLite session database, closed cleanly)
is copied per case, one file of it damaged, and the copy opened and read in full in a child
process (so that a crash is seen as a crash). Every case must either open intact (every
record there, equal to the pristine ones) or raise ``StoreCorruptedError``; none may return
fewer records silently, raise anything else, or kill the process.

With ``-s`` the outcome of each case is printed as a table.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message
from tests.processes import run_python

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DIM = 8
USERS = ("alice", "bob")
POINTS_PER_USER = 30
SESSIONS = 4
MESSAGES_PER_SESSION = 12

# The child: open both stores, read every record, print what it saw (or the error's type).
CHILD = textwrap.dedent(
    """
    import hashlib, json, sys
    from agentmem.errors import StoreCorruptedError
    home = sys.argv[1]
    kind = sys.argv[2]
    def digest(items):
        return hashlib.sha256("\\n".join(sorted(items)).encode()).hexdigest()
    try:
        if kind == "edge":
            from agentmem.long_term.records import RecordFilter, Scope
            from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
            with QdrantEdgeStore(home + "/long_term", dimension=8,
                                 auto_index=AutoIndex(enabled=False)) as store:
                items = []
                history = RecordFilter(include_history=True)
                for user in ("alice", "bob"):
                    records, _ = store.scroll(Scope(user_id=user), filter=history, limit=1000)
                    items += [r.id + r.content for r in records]
        else:
            from agentmem.stores.sqlite import SQLiteSessionStore
            with SQLiteSessionStore(home + "/sessions.db") as store:
                items = []
                for session in store.sessions():
                    items += [f"{session}{m.seq}{m.message.content}" for m in store.read(session)]
                    items += [json.dumps(store.get_state(session, k)) for k in
                              store.state_keys(session)]
                    items.append(json.dumps(store.get_owner(session)))
        print(json.dumps({"outcome": "intact", "count": len(items), "digest": digest(items)}))
    except StoreCorruptedError as exc:
        print(json.dumps({"outcome": "StoreCorruptedError", "message": str(exc)}))
    except Exception as exc:
        print(json.dumps({"outcome": type(exc).__name__, "message": str(exc)}))
    """
)


def build_pristine(home: Path, *, indexed: bool = False) -> None:
    """The plain home: one appendable segment. The indexed one: its points rebuilt into an
    optimized (HNSW) segment of a new generation, as the store does by itself."""
    policy = AutoIndex(min_unindexed=1, growth=0, check_every=1, enabled=indexed)
    records = [
        MemoryRecord.new(f"{user} fact {i}", "semantic", scope=Scope(user_id=user))
        for user in USERS
        for i in range(POINTS_PER_USER)
    ]
    with QdrantEdgeStore(home / "long_term", dimension=DIM, auto_index=policy) as store:
        store.upsert(  # one write: the indexed home rebuilds once, then has nothing unindexed
            records,
            [[1.0, float(i), float(i % 3), 0.5, 0.1, 0.2, 0.3, 0.4] for i in range(len(records))],
            [SparseVector([i, 100 + i % 3], [1.0, 0.5]) for i in range(len(records))],
        )
        store.wait_for_index()
    with SQLiteSessionStore(home / "sessions.db") as sessions:
        for s in range(SESSIONS):
            session = f"s{s}"
            sessions.claim_owner(session, {"owner": [USERS[s % 2], None]})
            sessions.append(
                session,
                [
                    Message(role="user", content=f"session {s} message {i} lorem ipsum")
                    for i in range(MESSAGES_PER_SESSION)
                ],
            )
            sessions.set_state(session, "working_memory", {"turn": s, "note": "dolor sit amet"})


def open_in_child(home: Path, kind: str) -> dict[str, object]:
    done = run_python("-c", CHILD, str(home), kind, cwd=ROOT, timeout=300)
    if done.returncode != 0:
        return {"outcome": f"crash (exit {done.returncode})", "message": done.stderr[-500:]}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- the damages ------------------------------------------------------------------------------


def removed(path: Path) -> None:
    path.unlink()


def truncated(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def altered(path: Path) -> None:
    """Flip the first non-zero byte past the file's middle data (or its first one)."""
    data = path.read_bytes()
    nonzero = [i for i in range(len(data)) if data[i]]
    assert nonzero, f"{path} holds only zeros"
    position = nonzero[len(nonzero) // 2]
    with path.open("r+b") as handle:
        handle.seek(position)
        handle.write(bytes([data[position] ^ 0x20]))


def altered_message(path: Path) -> None:
    """Change one character inside one stored message (a valid page: only the row's
    checksum can tell)."""
    data = path.read_bytes()
    position = data.index(b"session 2 message 5 lorem") + len(b"session 2 message 5 l")
    with path.open("r+b") as handle:
        handle.seek(position)
        handle.write(b"O")


DAMAGES: dict[str, Callable[[Path], None]] = {
    "removed": removed,
    "truncated": truncated,
    "altered": altered,
}


def segment_file(name: str) -> Callable[[Path], Path]:
    def find(home: Path) -> Path:
        (found,) = sorted((home / "long_term" / "segments").glob(f"*/{name}"))
        return found

    return find


def indexed_file(name: str) -> Callable[[Path], Path]:
    """A file of the optimized (HNSW-indexed) segment of the live generation."""

    def find(home: Path) -> Path:
        (tracker,) = sorted((home / "long_term").glob("gen-*/segments/*/id_tracker.mappings"))
        found = tracker.parent / name
        assert found.is_file(), found
        return found

    return find


def at(relative: str) -> Callable[[Path], Path]:
    return lambda home: home / relative


# (store, pristine home) -> file kind -> where the file is
FILES_BY_HOME: dict[tuple[str, str], dict[str, Callable[[Path], Path]]] = {
    ("edge", "plain"): {
        "edge_config.json": at("long_term/edge_config.json"),
        "agentmem-manifest.json": at("long_term/agentmem-manifest.json"),
        "segment.json": segment_file("segment.json"),
        "version.info": segment_file("version.info"),
        "mutable_id_tracker.mappings": segment_file("mutable_id_tracker.mappings"),
        "mutable_id_tracker.versions": segment_file("mutable_id_tracker.versions"),
        "payload_index/config.json": segment_file("payload_index/config.json"),
        "payload_storage/page_0.dat": segment_file("payload_storage/page_0.dat"),
        "vectors/chunk_0.mmap": segment_file("vector_storage-dense/vectors/chunk_0.mmap"),
        "wal/first-index": at("long_term/wal/first-index"),
        "wal/open-1": at("long_term/wal/open-1"),
    },
    # An indexed store: generations, and an optimized segment's own files.
    ("edge", "indexed"): {
        "CURRENT (indexed)": at("long_term/CURRENT"),
        "id_tracker.mappings (indexed)": indexed_file("id_tracker.mappings"),
        "id_tracker.versions (indexed)": indexed_file("id_tracker.versions"),
        "version.info (indexed)": indexed_file("version.info"),
        "HNSW links (indexed)": indexed_file("vector_index-dense/links_compressed.bin"),
        "dense matrix.dat (indexed)": indexed_file("vector_storage-dense/matrix.dat"),
        "int8 quantized.data (indexed)": indexed_file("vector_storage-dense/quantized.data"),
        "BM25 inverted_index.dat (indexed)": indexed_file("vector_index-bm25/inverted_index.dat"),
    },
    ("sqlite", "plain"): {
        "sessions.db": at("sessions.db"),
        "sessions.db.identity.json": at("sessions.db.identity.json"),
    },
}
# file kind -> (store, pristine home, where the file is)
FILE_KINDS = {
    kind: (store, home, where)
    for (store, home), files in FILES_BY_HOME.items()
    for kind, where in files.items()
}

CASES = [(kind, damage) for kind in FILE_KINDS for damage in DAMAGES]
CASES.append(("sessions.db", "a message altered"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    homes = {}
    for name in ("plain", "indexed"):
        home = tmp_path_factory.mktemp("pristine") / name
        home.mkdir()
        build_pristine(home, indexed=name == "indexed")
        homes[name] = home
    assert (homes["indexed"] / "long_term" / "CURRENT").exists()
    return homes


def copy_home(source: Path, target: Path) -> Path:
    # cp keeps Edge's preallocated files sparse (about 1 MB instead of 250 MB per copy).
    subprocess.run(["cp", "-r", "--sparse=always", str(source), str(target)], check=True)
    return target


@pytest.fixture(scope="module")
def outcomes(
    pristine: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[tuple[str, str], dict[str, object]]]:
    """Every case run once (two children at a time), plus each pristine home's reading."""
    base = tmp_path_factory.mktemp("damaged")

    def run(case: tuple[str, str]) -> dict[str, object]:
        kind, damage = case
        store, source, where = FILE_KINDS[kind]
        name = "".join(c if c.isalnum() else "_" for c in f"{kind}-{damage}")
        home = copy_home(pristine[source], base / name)
        (altered_message if damage == "a message altered" else DAMAGES[damage])(where(home))
        return {"store": store, "pristine": source, **open_in_child(home, store)}

    results: dict[tuple[str, str], dict[str, object]] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for case, result in zip(CASES, pool.map(run, CASES), strict=True):
            results[case] = result
    for source in ("plain", "indexed"):
        for store in ("edge", "sqlite"):
            copy = copy_home(pristine[source], base / f"pristine-{source}-{store}")
            results[(f"pristine {source}", store)] = open_in_child(copy, store)
    yield results
    print("\n| file | damage | outcome |\n|---|---|---|")
    for (kind, damage), result in results.items():
        outcome = str(result["outcome"])
        if outcome == "intact":
            outcome += f" ({result['count']} records, all equal)"
        print(f"| {kind} | {damage} | {outcome} |")


def test_pristine_homes_open_with_every_record(
    outcomes: dict[tuple[str, str], dict[str, object]],
) -> None:
    per_session = MESSAGES_PER_SESSION + 2  # its messages, its state, its owner
    for source in ("plain", "indexed"):
        edge, sqlite = (
            outcomes[(f"pristine {source}", "edge")],
            outcomes[(f"pristine {source}", "sqlite")],
        )
        assert edge["outcome"] == "intact"
        assert edge["count"] == len(USERS) * POINTS_PER_USER
        assert sqlite["outcome"] == "intact"
        assert sqlite["count"] == SESSIONS * per_session


@pytest.mark.parametrize(("kind", "damage"), CASES, ids=[f"{k}-{d}" for k, d in CASES])
def test_damage_is_refused_or_harmless(
    outcomes: dict[tuple[str, str], dict[str, object]], kind: str, damage: str
) -> None:
    result = outcomes[(kind, damage)]
    pristine = outcomes[(f"pristine {result['pristine']}", str(result["store"]))]
    assert result["outcome"] in ("intact", "StoreCorruptedError"), result
    if result["outcome"] == "intact":  # every record, each as it was
        assert (result["count"], result["digest"]) == (pristine["count"], pristine["digest"])
    else:
        message = str(result["message"])
        assert "agentmem restore" in message or "backup" in message, message
