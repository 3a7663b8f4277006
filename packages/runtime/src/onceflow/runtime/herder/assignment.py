"""Task ownership through Kafka consumer-group membership.

Every worker of a cluster joins the consumer group ``<group.id>`` and subscribes to the cluster's
assignment topic, which has one partition per *task slot* and never holds a record. The group
protocol (JoinGroup/SyncGroup/Heartbeat, with librdkafka's ``roundrobin`` assignor) decides which
worker owns which partitions; a worker runs the tasks whose slot it owns:

    slot(task) = ordinal(task) mod slots

where ``ordinal`` is the task's index in the cluster's sorted list of ``(connector, task)``. The
round-robin assignor deals partitions 0, 1, 2, ... to the members in turn, so consecutive tasks land
on different workers and the load is even.

When a worker leaves (shutdown) or dies (its session times out), the broker rebalances the group and
its slots, and so its tasks, move to the others. Rebalancing is eager: ``on_revoke`` stops the tasks
of every revoked slot (they commit and report UNASSIGNED) before the worker rejoins, and ``on_assign``
hands over the new slots. A zombie that missed the rebalance is fenced by its transactional id when
the new owner initializes its producer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from onceflow.core.kafka import DEFAULT_REPLICATION, Replication
from onceflow.core.logging import get_logger
from onceflow.runtime.storage.kafka_log import ensure_topic

_log = get_logger(__name__)

SlotsListener = Callable[[set[int]], None]


def slot_of(ordinal: int, slots: int) -> int:
    return ordinal % slots


class SlotMembership:
    """This worker's membership of the cluster's consumer group, and the slots it owns."""

    def __init__(
        self,
        client_config: Mapping[str, Any],
        *,
        group_id: str,
        topic: str,
        slots: int,
        worker_id: str,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 1000,
        replication: Replication = DEFAULT_REPLICATION,
    ) -> None:
        self.topic = topic
        self._replication = replication
        self.slots = slots
        self._client_config = dict(client_config)
        self._consumer_config = {
            **client_config,
            "group.id": group_id,
            "client.id": worker_id,
            "group.instance.id": None,
            "partition.assignment.strategy": "roundrobin",
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "max.poll.interval.ms": 300_000,
            "enable.auto.commit": False,
            "auto.offset.reset": "latest",
        }
        del self._consumer_config["group.instance.id"]
        self._consumer: Consumer | None = None
        self._owned: set[int] = set()
        self._lock = threading.Lock()
        self._on_revoke: SlotsListener = lambda slots: None
        self._on_assign: SlotsListener = lambda slots: None
        self.generation = 0

    def owned(self) -> set[int]:
        with self._lock:
            return set(self._owned)

    def join(self, on_assign: SlotsListener, on_revoke: SlotsListener) -> None:
        """Create the assignment topic if needed and subscribe; callbacks run inside :meth:`poll`."""
        ensure_topic(
            self._client_config, self.topic, self.slots, {"cleanup.policy": "delete"}, replication=self._replication
        )
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._consumer = Consumer(self._consumer_config)
        self._consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked)

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        slots = {p.partition for p in partitions}
        with self._lock:
            self._owned = slots
            self.generation += 1
        _log.info("membership.assigned", slots=sorted(slots), generation=self.generation)
        self._on_assign(slots)

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        slots = {p.partition for p in partitions}
        _log.info("membership.revoked", slots=sorted(slots))
        self._on_revoke(slots)
        with self._lock:
            self._owned -= slots

    def poll(self, timeout: float) -> None:
        """Serve the group protocol (heartbeats run in librdkafka; rebalance callbacks run here)."""
        assert self._consumer is not None
        msg = self._consumer.poll(timeout)
        if msg is not None and msg.error() is not None:
            _log.warning("membership.error", error=str(msg.error()))

    def leave(self) -> None:
        """Leave the group at once, so the others rebalance without waiting for a session timeout."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
