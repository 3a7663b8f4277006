"""``PartitionMarkerWriter``: the transaction coordinator's way into the broker's partition logs.

It implements :class:`onceflow.broker.transactions.MarkerWriter` over :class:`TopicRegistry`:
a COMMIT/ABORT marker is a control batch appended with ``PartitionLog.append_control``.

Guarantees (the ``MarkerWriter`` contract):
- when ``write_marker`` returns, the marker is in the partition log under the broker's fsync policy,
  exactly like an acknowledged produce: in the OS page cache (so it survives ``kill -9``), and also
  fdatasynced with ``fsync = "always"``; the partition's last stable offset and aborted-transaction
  index already account for it;
- fetches long-polling on the partition are woken, as by a produce (a read_committed reader
  waiting behind the LSO sees the transaction's records as soon as the COMMIT lands);
- a marker whose epoch is newer than the producer's (fencing bumped it) is accepted, and a re-sent
  marker is harmless (storage ends nothing twice);
- a topic or partition that does not exist raises ``MarkerWriteError``; any storage failure
  propagates, and the coordinator retries the marker later.
"""

from __future__ import annotations

from onceflow.broker.partition import now_ms
from onceflow.broker.storage.records import ControlType
from onceflow.broker.topics import TopicRegistry
from onceflow.broker.transactions import MarkerWriteError, TransactionMarker
from onceflow.broker.waiters import PartitionWaiters
from onceflow.core.logging import get_logger

log = get_logger(__name__)


class PartitionMarkerWriter:
    """Writes transaction markers into this broker's partition logs (see module docs)."""

    def __init__(self, topics: TopicRegistry, waiters: PartitionWaiters) -> None:
        self._topics = topics
        self._waiters = waiters

    def write_marker(self, marker: TransactionMarker) -> None:
        """:meth:`MarkerWriter.write_marker <onceflow.broker.transactions.MarkerWriter.write_marker>`: the
        marker is a control batch appended to the partition's log, then its long-polling fetches are woken."""
        topic, partition = marker.topic, marker.partition
        registered = self._topics.get(topic)
        if registered is None or not 0 <= partition < len(registered.partitions):
            raise MarkerWriteError(topic, partition, "unknown topic or partition")
        partition_log = registered.partitions[partition].log
        offset = partition_log.append_control(
            ControlType.COMMIT if marker.commit else ControlType.ABORT,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            coordinator_epoch=marker.coordinator_epoch,
            now_ms=now_ms(),
        )
        self._waiters.notify(topic, partition)
        log.debug(
            "txn.marker_written",
            topic=topic,
            partition=partition,
            pid=marker.producer_id,
            epoch=marker.producer_epoch,
            marker="commit" if marker.commit else "abort",
            offset=offset,
        )
