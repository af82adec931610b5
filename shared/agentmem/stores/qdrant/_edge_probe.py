"""Load a Qdrant Edge shard in a child process first, when nothing vouches for its files
(private).

Edge aborts the whole process on some damaged files (altered bytes in an id tracker make it
try a 103 GB allocation). When the store's manifest cannot vouch for the files (the last
process crashed, or the store predates manifests), the store loads the shard here first, in
a child: a damaged file then ends the child, and the caller gets
:class:`~agentmem.errors.StoreCorruptedError` instead of dying. The child also reports the
point count of each space, which the store compares with its manifest.

Example:
    >>> import tempfile
    >>> from agentmem.stores.qdrant._edge_shard import create_shard
    >>> path = Path(tempfile.mkdtemp())
    >>> create_shard(path, 4).close()
    >>> probe(path)
    {'*': 0, 'memories': 0, 'langgraph': 0, 'internal': 0}
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentmem.errors import StoreCorruptedError, StoreError

__all__ = ["count_spaces", "probe", "salvage"]

_TIMEOUT_S = 600.0


def count_spaces(shard: Any) -> dict[str, int]:
    """Points of ``shard`` (an ``EdgeShard``) in all (``"*"``) and in each space."""
    import qdrant_edge as qe

    from agentmem.long_term.records import SPACES
    from agentmem.stores.points import SPACE_FIELD

    counts = {"*": int(shard.count(qe.CountRequest(exact=True)))}
    for space in SPACES:
        match = qe.FieldCondition(SPACE_FIELD, match=qe.MatchValue(space))
        request = qe.CountRequest(exact=True, filter=qe.Filter(must=[match]))
        counts[space] = int(shard.count(request))
    return counts


def probe(directory: Path, *, timeout: float = _TIMEOUT_S) -> dict[str, int]:
    """Load the shard at ``directory`` in a child process; its point counts.

    Raises:
        StoreCorruptedError: The child crashed or Edge could not load the shard.
        StoreError: The child could not run (or took longer than ``timeout``).
    """
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agentmem.stores.qdrant._edge_probe", str(directory)],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        msg = f"could not check the Qdrant Edge store at {directory} in a child process: {exc}"
        raise StoreError(msg) from exc
    if done.returncode == 0:
        try:
            counts = json.loads(done.stdout.decode())
            return {str(k): int(v) for k, v in counts.items()}
        except (ValueError, AttributeError, TypeError):
            pass
    fate = (
        f"killed by signal {-done.returncode}"
        if done.returncode < 0
        else f"exit status {done.returncode}"
    )
    tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
    problem = f"Qdrant Edge could not load it in a child process ({fate}; {tail[0][:300]})"
    raise StoreCorruptedError(problem, path=str(directory))


def salvage(source: Path, target: Path, dimension: int) -> dict[str, int]:
    """Copy every point Edge can read from the shard at ``source`` into a new shard at
    ``target``, in a child process; the counts of what was kept.

    Raises:
        StoreCorruptedError: Nothing could be read (the child crashed or Edge failed).
    """
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentmem.stores.qdrant._edge_probe",
            "--salvage",
            str(source),
            str(target),
            str(dimension),
        ],
        capture_output=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    if done.returncode == 0:
        return {str(k): int(v) for k, v in json.loads(done.stdout.decode()).items()}
    fate = f"signal {-done.returncode}" if done.returncode < 0 else f"status {done.returncode}"
    tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
    msg = f"Qdrant Edge could not read {source} ({fate}; {tail[0][:300]})"
    raise StoreCorruptedError(msg, path=str(source))


def _salvage(source: str, target: str, dimension: int) -> dict[str, int]:
    import qdrant_edge as qe

    from agentmem.stores.qdrant._edge_shard import create_shard

    old = qe.EdgeShard.load(source)
    new = create_shard(Path(target), dimension)
    try:
        offset: Any = None
        while True:
            rows, offset = old.scroll(
                qe.ScrollRequest(offset=offset, limit=256, with_payload=True, with_vector=True)
            )
            points = [qe.Point(r.id, r.vector, r.payload or {}) for r in rows if r.vector]
            if points:
                new.update(qe.UpdateOperation.upsert_points(points))
            if offset is None:
                break
        new.flush()
        return count_spaces(new)
    finally:
        new.close()
        old.close()


def _main(argv: list[str]) -> int:
    import qdrant_edge as qe

    if argv[0] == "--salvage":
        sys.stdout.write(json.dumps(_salvage(argv[1], argv[2], int(argv[3]))))
        return 0
    shard = qe.EdgeShard.load(argv[0])
    try:
        sys.stdout.write(json.dumps(count_spaces(shard)))
    finally:
        shard.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
