"""A real multi-broker Apache Kafka (KRaft) as child processes: three nodes, replication 3, min ISR 2.

Every node is an :class:`~onceflow.testing.broker.apache_kafka.ApacheKafka` in combined mode: one
JVM is a broker *and* a voter of the controller quorum, so a three-node cluster keeps both its
metadata quorum and its partitions' ISRs (``min.insync.replicas=2``) with any one node down. The jars
come from ``make kafka`` (``.cache/kafka``), each JVM's heap is capped (``heap``, 384 MiB).

``start()`` steps:
    1. On the first start: pick the broker and controller ports of every node, one cluster id and
       the quorum (``1@host:port,2@...``), so every node's storage is formatted for the same cluster.
    2. Spawn every node (a quorum needs a majority of its voters before any broker registers).
    3. Wait until each one serves (its Metadata answer lists it).

The helpers say where things live (:meth:`leader_of`, :meth:`transaction_coordinator` and
:meth:`group_coordinator`, the latter two by a FindCoordinator request as clients send it) and act on
one node (:meth:`kill`: ``kill -9``; :meth:`restart`; :meth:`controlled_shutdown`: SIGTERM, which
Kafka answers with a controlled shutdown that moves leadership away first).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from onceflow.broker.admin.connection import KafkaConnection
from onceflow.broker.protocol.shapes import build_entity
from onceflow.core.process import free_port
from onceflow.testing.broker.apache_kafka import ApacheKafka, new_cluster_id

__all__ = ["CLUSTER_SETTINGS", "ApacheKafkaCluster", "CoordinatorType"]

CLUSTER_SETTINGS: Mapping[str, object] = {
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.num.partitions": 3,
    "share.coordinator.state.topic.replication.factor": 3,
    "share.coordinator.state.topic.min.isr": 2,
    "unclean.leader.election.enable": False,
    # A killed node is fenced (its leaderships move) once its session expires: 4 s instead of 9 s.
    "broker.session.timeout.ms": 4000,
    "broker.heartbeat.interval.ms": 500,
}
"""``server.properties`` of every node on top of :data:`~onceflow.testing.broker.apache_kafka.DEFAULT_SETTINGS`:
replication factor 3 and min ISR 2 for every topic, the offsets topic and the transaction state log."""


class CoordinatorType:
    """FindCoordinator's key types."""

    GROUP = 0
    TRANSACTION = 1


class ApacheKafkaCluster:
    """``size`` (3) KRaft nodes under ``base_dir`` (``node-1``, ``node-2``, ...), listening on ``host``.

    ``settings`` override :data:`CLUSTER_SETTINGS` on every node. Node ids are 1..size.
    """

    def __init__(
        self,
        base_dir: Path,
        size: int = 3,
        *,
        host: str = "127.0.0.1",
        settings: Mapping[str, object] | None = None,
        heap: str = "384m",
        startup_timeout: float = 120.0,
        stop_timeout: float = 30.0,
    ) -> None:
        if size < 1:
            raise ValueError(f"a cluster needs at least one node, got size={size}")
        self.base_dir = Path(base_dir)
        self.host = host
        self.size = size
        self._settings = {**CLUSTER_SETTINGS, **(settings or {})}
        self._heap = heap
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self.nodes: dict[int, ApacheKafka] = {}

    # -- lifecycle ----------------------------------------------------------------------------

    def _create_nodes(self) -> None:
        # Step 1
        ids = range(1, self.size + 1)
        ports = {node_id: (free_port(self.host), free_port(self.host)) for node_id in ids}
        voters = ",".join(f"{node_id}@{self.host}:{ports[node_id][1]}" for node_id in ids)
        cluster_id = new_cluster_id()
        for node_id in ids:
            self.nodes[node_id] = ApacheKafka(
                self.base_dir / f"node-{node_id}",
                ports[node_id][0],
                host=self.host,
                controller_port=ports[node_id][1],
                settings=self._settings,
                heap=self._heap,
                node_id=node_id,
                cluster_id=cluster_id,
                quorum_voters=voters,
                startup_timeout=self._startup_timeout,
                stop_timeout=self._stop_timeout,
            )

    def start(self) -> ApacheKafkaCluster:
        """Start every node that is not running and return once each serves (steps in the module docstring)."""
        if not self.nodes:
            self._create_nodes()
        stopped = [node for node in self.nodes.values() if not node.is_running()]
        try:
            # Step 2 (formatting runs a JVM per node: in parallel)
            with ThreadPoolExecutor(len(stopped) or 1) as pool:
                list(pool.map(lambda node: node.spawn(), stopped))
            # Step 3
            for node in stopped:
                node.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every node gracefully (SIGTERM, then ``kill -9`` after the stop timeout), all at once."""
        running = [node for node in self.nodes.values() if node.is_running()]
        with ThreadPoolExecutor(len(running) or 1) as pool:
            list(pool.map(lambda node: node.stop(), running))

    def __enter__(self) -> ApacheKafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- where things are ---------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every node's ``host:port``, for client configs."""
        return ",".join(node.bootstrap_servers for node in self.nodes.values())

    def node(self, node_id: int) -> ApacheKafka:
        """The node with id ``node_id``."""
        return self.nodes[node_id]

    def running(self) -> list[int]:
        """The ids of the nodes whose process runs."""
        return [node_id for node_id, node in self.nodes.items() if node.is_running()]

    def _live_bootstrap(self) -> str:
        return ",".join(self.nodes[node_id].bootstrap_servers for node_id in self.running())

    @contextlib.contextmanager
    def _admin(self) -> Iterator[AdminClient]:
        yield AdminClient({"bootstrap.servers": self._live_bootstrap(), "client.id": "onceflow-test-cluster"})

    def leader_of(self, topic: str, partition: int = 0, *, timeout: float = 30.0) -> int:
        """The node id that leads ``topic``'s ``partition`` now (waits while it has no leader)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._admin() as admin:
                try:
                    described = admin.list_topics(topic, timeout=5).topics.get(topic)
                except KafkaException:
                    described = None
            found = described.partitions.get(partition) if described is not None and described.error is None else None
            if found is not None and found.leader >= 0:
                return int(found.leader)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}[{partition}] has no leader after {timeout}s")
            time.sleep(0.2)

    def in_sync_replicas(self, topic: str, partition: int = 0) -> list[int]:
        """The node ids in ``topic``'s ``partition``'s ISR."""
        with self._admin() as admin:
            described = admin.list_topics(topic, timeout=10).topics[topic]
        return sorted(int(node_id) for node_id in described.partitions[partition].isrs)

    def transaction_coordinator(self, transactional_id: str, *, timeout: float = 30.0) -> int:
        """The node id of the transaction coordinator of ``transactional_id`` (FindCoordinator)."""
        return self._find_coordinator(CoordinatorType.TRANSACTION, transactional_id, timeout)

    def group_coordinator(self, group: str, *, timeout: float = 30.0) -> int:
        """The node id of the group coordinator of consumer group ``group`` (FindCoordinator)."""
        return self._find_coordinator(CoordinatorType.GROUP, group, timeout)

    def _find_coordinator(self, key_type: int, key: str, timeout: float) -> int:
        request = build_entity(FindCoordinatorRequest, {"key_type": key_type, "coordinator_keys": [key]})
        deadline = time.monotonic() + timeout
        last = "no node answered"
        while time.monotonic() < deadline:
            for node_id in self.running():
                try:
                    with KafkaConnection(self.nodes[node_id].bootstrap_servers, timeout=5.0) as connection:
                        (answer,) = connection.request(request).coordinators
                except (OSError, ConnectionError) as exc:
                    last = f"node {node_id}: {exc}"
                    continue
                if answer.error_code == ErrorCode.none:
                    return int(answer.node_id)
                last = f"node {node_id}: {answer.error_code.name}"
            time.sleep(0.2)
        raise TimeoutError(f"no coordinator of {key!r} (key type {key_type}) within {timeout}s: {last}")

    def under_replicated(self, topics: Sequence[str] = ()) -> list[str]:
        """``topic[partition]`` of every partition (of ``topics``, default all) whose ISR is not all replicas."""
        with self._admin() as admin:
            metadata = admin.list_topics(timeout=10).topics
        return [
            f"{name}[{pid}]"
            for name, described in sorted(metadata.items())
            if not topics or name in topics
            for pid, partition in sorted(described.partitions.items())
            if set(partition.isrs) != set(partition.replicas)
        ]

    def wait_fully_replicated(self, timeout: float = 120.0) -> None:
        """Wait until every node serves and every partition's ISR holds all its replicas."""
        deadline = time.monotonic() + timeout
        lagging: list[str] = ["not checked yet"]
        while time.monotonic() < deadline:
            try:
                lagging = self.under_replicated()
            except KafkaException as exc:
                lagging = [str(exc)]
            if not lagging and all(node.is_ready() for node in self.nodes.values()):
                return
            time.sleep(0.5)
        raise TimeoutError(f"partitions still under-replicated after {timeout}s: {lagging[:10]}")

    # -- acting on one node -------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        """``kill -9`` node ``node_id``: a crash, no controlled shutdown."""
        self.nodes[node_id].kill()

    def restart(self, node_id: int) -> None:
        """Start node ``node_id`` again on its data and ports; returns once it serves."""
        node = self.nodes[node_id]
        if node.is_running():
            node.stop()
        node.start()

    def controlled_shutdown(self, node_id: int, timeout: float | None = None) -> int | None:
        """Stop node ``node_id`` with SIGTERM: Kafka moves its leaderships away, then exits. Its exit code."""
        return self.nodes[node_id].stop(timeout)

    def log_tails(self, lines: int = 30) -> str:
        """The end of every node's log, for a failed test's report."""
        return "\n".join(
            f"--- node {node_id} ({node.log_path}) ---\n" + node.log_tail(lines) for node_id, node in self.nodes.items()
        )
