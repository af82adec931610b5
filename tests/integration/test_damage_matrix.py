"""The damage matrix: each file kind of an embedded home x {removed, truncated, altered, ...}.

Two small pristine homes (a Qdrant Edge store with its embedder record and the access
statistics of recalls, and a SQLite session database, closed cleanly; one of them indexed)
are walked, and each kind of file found in them (every file, the payload index of each field
and each segment's files taken once per kind) is damaged in a copy of its home, which is then
opened and read in full in a child process (so that a crash is seen as a crash). Every case
must either open intact (every record there, equal to the pristine ones, access statistics
included) or raise ``StoreCorruptedError`` naming the way back; none may return fewer or
changed records silently, raise anything else, or kill the process. Only the files of
:data:`REBUILT` (which agentmem rebuilds or does without) may open intact; damage to any
other file must be refused, so a new kind of file is covered, and checked, as it appears.

With ``-s`` the outcome of each case is printed as a table.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from agentmem.long_term import LongTermMemory
from agentmem.long_term.embedder_record import bind_embedder
from agentmem.long_term.records import MemoryRecord, Scope
from agentmem.long_term.store import SparseVector
from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
from agentmem.stores.sqlite import SQLiteSessionStore
from agentmem.types import Message
from tests.fakes import HashingEmbedder
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
            from agentmem.long_term.embedder_record import bind_embedder
            from agentmem.long_term.records import RecordFilter, Scope
            from agentmem.stores.qdrant.edge import AutoIndex, QdrantEdgeStore
            from tests.fakes import HashingEmbedder
            with QdrantEdgeStore(home + "/long_term", dimension=8,
                                 auto_index=AutoIndex(enabled=False)) as store:
                bind_embedder(store, HashingEmbedder(8))  # whose vectors: as a service opens
                items = []
                history = RecordFilter(include_history=True)
                for user in ("alice", "bob"):
                    records, _ = store.scroll(Scope(user_id=user), filter=history, limit=1000)
                    items += [r.model_dump_json() for r in records]
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
    optimized (HNSW) segment of a new generation, as the store does by itself. Both with
    the embedder record of the model that made the vectors and the access statistics of a
    few recalls (``agentmem-access.log``)."""
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
        bind_embedder(store, HashingEmbedder(DIM))
        for user in USERS:
            memory = LongTermMemory(
                store=store, embedder=HashingEmbedder(DIM), user_id=user, on_close=lambda: None
            )
            for query in ("fact 3", "fact 12"):
                memory.retrieve_memories(f"{user} {query}", 3)
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


def cut_by_one(path: Path) -> None:
    """Its last byte cut off (a torn last write)."""
    os.truncate(path, path.stat().st_size - 1)


def _nonzero(path: Path) -> np.ndarray:
    """The offsets of the file's non-zero bytes."""
    return np.flatnonzero(np.fromfile(path, dtype=np.uint8))


def _flip(path: Path, which: Callable[[np.ndarray], int]) -> None:
    nonzero = _nonzero(path)
    assert len(nonzero), f"{path} holds only zeros"
    position = int(which(nonzero))
    with path.open("r+b") as handle:
        handle.seek(position)
        byte = handle.read(1)[0]
        handle.seek(position)
        handle.write(bytes([byte ^ 0x20]))


def altered(path: Path) -> None:
    """Flip the first non-zero byte past the file's middle data (or its first one)."""
    _flip(path, lambda nonzero: nonzero[len(nonzero) // 2])


def altered_at_end(path: Path) -> None:
    """Flip the last non-zero byte of the file."""
    _flip(path, lambda nonzero: nonzero[-1])


def _middle_block(path: Path) -> int:
    return max(0, path.stat().st_size // 2 - 2048)


def zeroed_block(path: Path) -> None:
    """4 KiB of zeros written over the file's middle (a lost page)."""
    with path.open("r+b") as handle:
        handle.seek(_middle_block(path))
        handle.write(bytes(4096))


def changes(path: Path, damage: str) -> bool:
    """Whether ``damage`` changes the file at all (an empty file cannot be cut, one of
    zeros not altered)."""
    if damage == "removed":
        return True
    size = path.stat().st_size
    if damage == "4 KiB zeroed":
        start = _middle_block(path)
        return start + 4096 > size or bool(np.any(np.fromfile(path, np.uint8)[start:]))
    if damage in ("truncated", "cut by one byte"):
        return size > 0
    return bool(len(_nonzero(path)))


def altered_model_name(path: Path) -> None:
    """One letter of the model's name in the embedder record changed (still valid JSON:
    only a checksum can tell)."""
    data = path.read_bytes()
    position = data.index(b"hashing-fake") + len(b"hashing-fak")
    with path.open("r+b") as handle:
        handle.seek(position)
        handle.write(b"E")


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
#: More kinds of damage, for the files agentmem itself writes (Edge's get :data:`DAMAGES`).
MORE_DAMAGES: dict[str, Callable[[Path], None]] = {
    "cut by one byte": cut_by_one,
    "altered at the end": altered_at_end,
    "4 KiB zeroed": zeroed_block,
}
#: Damages aimed at one file: (file kind, damage) -> how.
AIMED: dict[tuple[str, str], Callable[[Path], None]] = {
    ("sessions.db", "a message altered"): altered_message,
    ("long_term/agentmem-embedder.json", "the model's name altered"): altered_model_name,
}

#: Files that may open intact whatever their damage: agentmem rebuilds them exactly, or
#: they only spare work. The lock file (any file will do), the unindexed-points hint of
#: the index policy, the census of the Edge store (read only when its checksum is the
#: manifest's; otherwise stats counts through the store, and the next close writes it
#: again: ``test_edge_census.py``), the session database's identity record (written again
#: from the database at every open) and the Edge manifest when it is gone (the store is
#: then loaded in a child process first; altered, it is refused).
REBUILT = {
    "long_term/agentmem.lock": set(DAMAGES) | set(MORE_DAMAGES),
    "long_term/agentmem-index.json": set(DAMAGES) | set(MORE_DAMAGES),
    "long_term/agentmem-census.json": set(DAMAGES) | set(MORE_DAMAGES),
    "sessions.db.identity.json": set(DAMAGES) | set(MORE_DAMAGES),
    "long_term/agentmem-manifest.json": {"removed"},
    # Without a record, the next opener's embedder is adopted (the documented way to
    # re-adopt a model); altered, it is refused.
    "long_term/agentmem-embedder.json": {"removed"},
}
#: Edge rewrites these at every load (the manifest lists them without a checksum).
_REWRITTEN = "tracker_journal.dat"
_AGENTMEM_OWN = re.compile(r"agentmem-|CURRENT|sessions\.db")


def file_kind(home: Path, path: Path) -> str:
    """The kind of a file of a home: its path with the generation and segment names, the
    payload index's field names and the WAL segment numbers left out."""
    relative = path.relative_to(home).as_posix()
    segment = re.search(r"segments/([^/]+)/", relative)
    if segment is not None:
        directory = home / relative[: segment.end()]
        mutable = (directory / "mutable_id_tracker.mappings").exists()
        relative = relative.replace(segment.group(1), "appendable" if mutable else "indexed")
    relative = re.sub(r"gen-[0-9a-f-]+/", "", relative)
    relative = re.sub(r"payload_index/.+/", "payload_index/*/", relative)
    return re.sub(r"wal/(open|closed)-\d+", r"wal/\1-N", relative)


def walk(homes: dict[str, Path]) -> dict[str, tuple[str, str]]:
    """File kind -> (pristine home, the file's path in it): the first file of each kind."""
    found: dict[str, tuple[str, str]] = {}
    for name, home in homes.items():
        for path in sorted(home.rglob("*")):
            if path.is_file():
                kind = file_kind(home, path)
                found.setdefault(kind, (name, path.relative_to(home).as_posix()))
    return found


def store_of(kind: str) -> str:
    return "sqlite" if kind.startswith("sessions.db") else "edge"


def cases_of(homes: dict[str, Path], files: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """Each file kind x each damage that changes it (the files agentmem writes get
    :data:`MORE_DAMAGES` too), and the aimed damages."""
    cases = [(kind, damage) for kind in files for damage in DAMAGES]
    cases += [
        (kind, damage)
        for kind in files
        if _AGENTMEM_OWN.search(kind) and "payload_index" not in kind
        for damage in MORE_DAMAGES
    ]
    cases = [(k, d) for k, d in cases if changes(homes[files[k][0]] / files[k][1], d)]
    return cases + list(AIMED)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    homes = {}
    for name in ("plain", "indexed"):
        home = tmp_path_factory.mktemp("pristine") / name
        home.mkdir()
        build_pristine(home, indexed=name == "indexed")
        homes[name] = home
    assert (homes["indexed"] / "long_term" / "CURRENT").exists()
    for file in ("agentmem-embedder.json", "agentmem-access.log"):
        assert (homes["plain"] / "long_term" / file).is_file(), file
    return homes


def copy_home(source: Path, target: Path) -> Path:
    # cp keeps Edge's preallocated files sparse (about 1 MB instead of 250 MB per copy).
    subprocess.run(["cp", "-r", "--sparse=always", str(source), str(target)], check=True)
    return target


@pytest.fixture(scope="module")
def files(pristine: dict[str, Path]) -> dict[str, tuple[str, str]]:
    found = walk(pristine)
    for kind, _ in AIMED:
        assert kind in found, f"no {kind} in the pristine homes"
    return found


@pytest.fixture(scope="module")
def outcomes(
    pristine: dict[str, Path],
    files: dict[str, tuple[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[tuple[str, str], dict[str, object]]]:
    """Every case run once (two children at a time), plus each pristine home's reading."""
    base = tmp_path_factory.mktemp("damaged")
    cases = cases_of(pristine, files)

    def run(case: tuple[str, str]) -> dict[str, object]:
        kind, damage = case
        source, relative = files[kind]
        name = "".join(c if c.isalnum() else "_" for c in f"{kind}-{damage}")
        home = copy_home(pristine[source], base / name)
        damage_file = AIMED.get(case) or DAMAGES.get(damage) or MORE_DAMAGES[damage]
        damage_file(home / relative)
        store = store_of(kind)
        return {"store": store, "pristine": source, **open_in_child(home, store)}

    results: dict[tuple[str, str], dict[str, object]] = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for case, result in zip(cases, pool.map(run, cases), strict=True):
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


def test_every_file_kind_is_damaged(files: dict[str, tuple[str, str]]) -> None:
    """The walk found the files of both homes, the side files agentmem writes among them."""
    for kind in (
        "long_term/agentmem-manifest.json",
        "long_term/agentmem-access.log",
        "long_term/CURRENT",
        "long_term/segments/indexed/id_tracker.mappings",
        "long_term/segments/appendable/version.info",
        "long_term/wal/open-N",
        "sessions.db",
    ):
        assert kind in files, sorted(files)


def test_damage_is_refused_or_harmless(
    outcomes: dict[tuple[str, str], dict[str, object]],
) -> None:
    failures = []
    for (kind, damage), result in outcomes.items():
        if kind.startswith("pristine "):
            continue
        pristine = outcomes[(f"pristine {result['pristine']}", str(result["store"]))]
        if result["outcome"] == "intact":  # every record, each as it was; a rebuilt file
            same = (result["count"], result["digest"]) == (pristine["count"], pristine["digest"])
            rebuilt = damage in REBUILT.get(kind, ()) or kind.endswith(_REWRITTEN)
            if not same or not rebuilt:
                failures.append((kind, damage, result))
        elif result["outcome"] != "StoreCorruptedError" or not (
            "agentmem restore" in str(result["message"]) or "backup" in str(result["message"])
        ):
            failures.append((kind, damage, result))
    assert not failures, "\n".join(map(str, failures))
