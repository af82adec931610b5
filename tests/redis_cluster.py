"""Run a throwaway Redis Cluster on loopback: 3 masters, each with one replica (tests and ``bench/``).

Six :class:`~tests.redis_server.RedisServer` processes with ``--cluster-enabled yes``, each
in its own directory with its own AOF (fsync always) and ``nodes.conf``, joined by
``redis-cli --cluster create ... --cluster-replicas 1``. The cluster bus port is chosen
free too (``--cluster-port``), so nothing depends on ``port + 10000`` being free.

``node_timeout`` (ms) is Redis' ``cluster-node-timeout``: how long a master must be
unreachable before the others mark it failed and its replica takes over. The default
here (1000 ms, Redis ships with 15000) makes a failover take a few seconds.

Example:
    >>> with RedisCluster.start(tmp_dir) as cluster:  # doctest: +SKIP
    ...     master = cluster.master_of("agentmem:{s1}:log")
    ...     master.kill()
    ...     cluster.wait_for_failover(master)
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis
import redis.crc

from tests.processes import StopOnExit
from tests.redis_server import RedisServer, RedisServerError, find_redis_server, free_port

__all__ = ["RedisCluster", "find_redis_cli"]

_FORM_TIMEOUT = 60.0


def find_redis_cli() -> str | None:
    """Path of the ``redis-cli`` executable on PATH (Debian package ``redis-tools``), or ``None``."""
    return shutil.which("redis-cli")


def _node(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_connect_timeout=1.0, socket_timeout=2.0)


def _cluster_info(port: int) -> dict[str, str]:
    client = _node(port)
    try:
        raw = client.execute_command("CLUSTER INFO")
    finally:
        client.close()
    if isinstance(raw, dict):  # redis-py parses the reply
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.split() if ":" in line)


class RedisCluster(StopOnExit):
    """Six ``redis-server`` nodes on 127.0.0.1 forming one cluster (3 masters, 3 replicas).

    Attributes:
        nodes: The six servers, in the order ``redis-cli --cluster create`` was given them
            (it makes the first three masters).
        url: A cluster URL agentmem accepts: ``redis+cluster://127.0.0.1:<port of node 0>``.
    """

    def __init__(self, nodes: list[RedisServer], node_timeout: int) -> None:
        self.nodes = nodes
        self.node_timeout = node_timeout

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    @classmethod
    def start(cls, directory: Path, *, node_timeout: int = 1000) -> RedisCluster:
        """Start six nodes under ``directory`` (``node-0`` ... ``node-5``), create the
        cluster and wait until every node reports ``cluster_state:ok``."""
        cli = find_redis_cli()
        if cli is None:
            msg = "redis-cli is not on PATH; install it (apt-get install redis-tools)"
            raise RedisServerError(msg)

        def options(port: int) -> list[str]:
            return [
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout),
                "--cluster-port", str(free_port()),
            ]  # fmt: skip

        nodes: list[RedisServer] = []
        cluster = cls(nodes, node_timeout)
        try:
            for i in range(6):
                nodes.append(RedisServer.start(directory / f"node-{i}", extra_args=options))
            addresses = [f"127.0.0.1:{node.port}" for node in nodes]
            create = [cli, "--cluster", "create", *addresses]
            done = subprocess.run(
                [*create, "--cluster-replicas", "1", "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=_FORM_TIMEOUT,
                check=False,
            )
            if done.returncode != 0:
                msg = f"redis-cli --cluster create failed: {done.stdout[-2000:]}{done.stderr}"
                raise RedisServerError(msg)
            cluster.wait_until_ok(cluster.ports)
            cluster.wait_for_replicas()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def wait_until_ok(self, ports: list[int], timeout: float = _FORM_TIMEOUT) -> float:
        """Wait until every node of ``ports`` reports ``cluster_state:ok`` with all 16384
        slots served; return the seconds waited."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            try:
                infos = [_cluster_info(port) for port in ports]
                if all(
                    info.get("cluster_state") == "ok" and info.get("cluster_slots_ok") == "16384"
                    for info in infos
                ):
                    return time.monotonic() - started
            except redis.RedisError:
                pass  # a node still loading its AOF
            if time.monotonic() > deadline:
                msg = f"Redis Cluster on ports {ports} not ok within {timeout} s"
                raise RedisServerError(msg)
            time.sleep(0.05)

    def wait_for_replicas(self, timeout: float = _FORM_TIMEOUT) -> None:
        """Wait until every live replica has synced with its master (a replica that never
        synced refuses to take over)."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            client = _node(node.port)
            try:
                while True:
                    try:
                        info = client.info("replication")
                    except redis.ConnectionError:
                        break  # not running
                    if info.get("role") != "slave" or info.get("master_link_status") == "up":
                        break
                    if time.monotonic() > deadline:
                        msg = f"replica on port {node.port} did not sync within {timeout} s"
                        raise RedisServerError(msg)
                    time.sleep(0.05)
            finally:
                client.close()

    def _node_by_port(self, port: int) -> RedisServer:
        return next(node for node in self.nodes if node.port == port)

    def _slots(self) -> list[tuple[int, int, int]]:
        """``(first slot, last slot, master port)`` ranges, as a live node sees them."""
        for node in self.nodes:
            client = _node(node.port)
            try:
                rows = client.execute_command("CLUSTER SLOTS")
            except redis.ConnectionError:
                continue
            finally:
                client.close()
            return [(int(start), int(end), int(master[1])) for start, end, master, *_ in rows]
        msg = "no node of the cluster answers"
        raise RedisServerError(msg)

    def master_of(self, key: str) -> RedisServer:
        """The node that serves ``key``'s slot now (as a live node sees it)."""
        slot = redis.crc.key_slot(key.encode())
        for start, end, port in self._slots():
            if start <= slot <= end:
                return self._node_by_port(port)
        msg = f"no node serves slot {slot} of {key!r}"
        raise RedisServerError(msg)

    def masters(self) -> list[RedisServer]:
        """The nodes that serve slots now."""
        ports = {port for _, _, port in self._slots()}
        return [node for node in self.nodes if node.port in ports]

    def wait_for_failover(self, dead: RedisServer, timeout: float = _FORM_TIMEOUT) -> float:
        """After ``dead`` (a master) was killed: wait until the live nodes report
        ``cluster_state:ok`` again, its slots served by a promoted replica; return the
        seconds waited."""
        live = [node.port for node in self.nodes if node is not dead]
        started = time.monotonic()
        deadline = started + timeout
        while dead in self.masters():
            if time.monotonic() > deadline:
                msg = f"no replica took over from port {dead.port} within {timeout} s"
                raise RedisServerError(msg)
            time.sleep(0.05)
        self.wait_until_ok(live, max(0.0, deadline - time.monotonic()))
        return time.monotonic() - started

    def stop(self) -> None:
        """Terminate every node (idempotent)."""
        for node in self.nodes:
            node.stop()


def cluster_available() -> str | None:
    """Why a cluster cannot be started here (a missing executable), or ``None``."""
    if find_redis_server() is None:
        return "redis-server is not on PATH (apt-get install redis-server)"
    if find_redis_cli() is None:
        return "redis-cli is not on PATH (apt-get install redis-tools)"
    return None
