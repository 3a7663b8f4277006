"""AbstractWorkerSourceTask: the source-task loop, with named hooks for the delivery guarantee.

The loop is the same for every guarantee; the subclasses fill in the hooks (as Kafka Connect's
``AbstractWorkerSourceTask`` and its ``WorkerSourceTask`` / ``ExactlyOnceWorkerSourceTask``):

- :meth:`create_producer` and :meth:`prepare_to_initialize_task` (before offsets are read);
- :meth:`begin_send_iteration` (before each poll), :meth:`before_dispatch` (before a batch is sent),
  :meth:`batch_dispatched` (after);
- :meth:`commit_offsets` (on a boundary, on pause and on a graceful stop), :meth:`abandon` (on failure).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer

from onceflow.core.kafka import end_offsets, produce, raise_if_fenced
from onceflow.core.logging import get_logger
from onceflow.runtime.api.source import EndOfInput, SourceRecord, SourceTask, SourceTaskContext
from onceflow.runtime.storage.kafka_log import GROUP_PREFIX
from onceflow.runtime.storage.offsets import OffsetBackingStore, encode_offset_key
from onceflow.runtime.worker.end_of_input import ended_sources, has_ended, marker_records
from onceflow.runtime.worker.task import TaskSetup, WorkerTask

_log = get_logger(__name__)


class OffsetSnapshot:
    """The committed offsets of one connector, as read when the task started."""

    def __init__(self, connector: str, offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self._connector = connector
        self._offsets = {encode_offset_key(connector, p): o for p, o in offsets}

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._offsets.get(encode_offset_key(self._connector, partition))


class AbstractWorkerSourceTask(WorkerTask):
    def __init__(
        self,
        setup: TaskSetup[SourceTask],
        *,
        producer_config: Mapping[str, Any],
        offset_store: OffsetBackingStore,
        client_config: Mapping[str, Any] | None = None,
        allowed_paths: tuple[str, ...] = (),
    ) -> None:
        super().__init__(setup.task_id, setup.worker_id, setup.listener, setup.target)
        self.allowed_paths = allowed_paths
        self.task = setup.task
        self.task_config = dict(setup.task_config)
        self.connector_config = setup.connector_config
        self.producer_config = dict(producer_config)
        self.offset_store = offset_store
        self.producer: Producer | None = None
        #: Offsets of the records dispatched since the last commit, by encoded offsets-topic key.
        self.pending_offsets: dict[bytes, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        self.records_sent = 0
        #: bootstrap.servers and security settings, for the end-of-input's end offsets.
        self.client_config = dict(client_config) if client_config is not None else dict(self.producer_config)
        #: The input has ended and this task instance has run :meth:`end_input`.
        self.input_ended = False

    # -- hooks -----------------------------------------------------------------------------------------

    @abstractmethod
    def create_producer(self) -> Producer: ...

    def prepare_to_initialize_task(self) -> None:
        """Runs after the producer is created and before the committed offsets are read."""

    def begin_send_iteration(self) -> None:
        """Runs before every poll (e.g. to commit when an interval has passed)."""

    def before_dispatch(self, records: list[SourceRecord]) -> None:
        """Runs before a non-empty batch is produced (e.g. to begin a transaction)."""

    def batch_dispatched(self, records: list[SourceRecord]) -> None:
        """Runs after a poll's records are handed to the producer (possibly none)."""

    @abstractmethod
    def commit_offsets(self) -> None:
        """Make the records dispatched so far and :attr:`pending_offsets` durable together (or in order)."""

    def abandon(self) -> None:
        """The task failed: drop uncommitted work. The default has nothing to drop."""

    # -- WorkerTask --------------------------------------------------------------------------------------

    def initialize(self) -> None:
        """Steps:
        1. Create the producer and run :meth:`prepare_to_initialize_task` (exactly-once: fence zombies).
        2. Read the connector's committed offsets from the offset store.
        3. Hand them to the task and start it.
        """
        # Step 1
        self.producer = self.create_producer()
        self.prepare_to_initialize_task()
        # Step 2
        offsets = self.offset_store.offsets(self.id.connector)
        _log.info("task.offsets_read", connector=self.id.connector, task=self.id.task, partitions=len(offsets))
        # Step 3
        self.task.initialize(
            SourceTaskContext(
                self.id.connector, self.id.task, OffsetSnapshot(self.id.connector, offsets), self.allowed_paths
            )
        )
        self.task.start(self.task_config)

    def execute(self) -> None:
        assert self.producer is not None
        self.begin_send_iteration()
        records = self.task.poll()
        if records:
            self.before_dispatch(records)
            self._dispatch(records)
        self.batch_dispatched(records)
        self.producer.poll(0)
        if not records and not self.input_ended:
            end = self.task.end_of_input()
            if end is not None:
                self.end_input(end)

    def end_input(self, end: EndOfInput) -> None:
        """End a bounded input: the steps of :mod:`onceflow.runtime.worker.end_of_input`."""
        connector = self.id.connector
        # Step 1
        self.commit_offsets()
        # Step 2
        self.before_dispatch([])
        key = encode_offset_key(connector, end.source_partition)
        self.pending_offsets[key] = (end.source_partition, end.source_offset)
        self.commit_offsets()
        self.input_ended = True
        # Step 3
        ended = self._ended_sources(end)
        if not has_ended(end.source_offset) or ended < end.sources:
            _log.info("task.input_ended", connector=connector, task=self.id.task, ended=ended, sources=end.sources)
            return
        # Step 4
        ends = {topic: end_offsets(self.client_config, topic, group_prefix=GROUP_PREFIX) for topic in end.topics}
        markers = marker_records(end, connector, ends)
        self.before_dispatch(markers)
        self._dispatch(markers)
        self.commit_offsets()
        _log.info(
            "task.end_of_input_written", connector=connector, task=self.id.task, topics=",".join(end.topics),
            markers=len(markers), end_offsets=ends,
        )  # fmt: skip

    def _ended_sources(self, end: EndOfInput, wait_s: float = 10.0) -> int:
        """Step 3: the connector's ended source partitions, read once this task's own final offset is
        visible (a broker may write the commit markers of step 2 just after it answered)."""
        connector = self.id.connector
        own = encode_offset_key(connector, end.source_partition)
        deadline = time.monotonic() + wait_s
        while True:
            by_key = {encode_offset_key(connector, p): (p, o) for p, o in self.offset_store.offsets(connector)}
            mine = by_key.pop(own, None)
            if (mine is not None and has_ended(mine[1])) or time.monotonic() > deadline:
                return ended_sources(list(by_key.values())) + (1 if has_ended(end.source_offset) else 0)
            time.sleep(0.1)

    def _dispatch(self, records: list[SourceRecord]) -> None:
        producer = self.producer
        assert producer is not None
        pending = self.pending_offsets
        connector = self.id.connector
        last_partition: Mapping[str, Any] | None = None
        last_key = b""
        for record in records:
            kwargs: dict[str, Any] = {}
            if record.timestamp is not None:
                kwargs["timestamp"] = record.timestamp
            if record.headers:
                kwargs["headers"] = record.headers
            if record.partition is not None:
                kwargs["partition"] = record.partition
            try:
                produce(producer, record.topic, value=record.value, key=record.key, **kwargs)
            except KafkaException as exc:
                raise_if_fenced(exc, str(self.producer_config.get("transactional.id", "")))
                raise
            if record.source_partition is not last_partition:
                last_partition = record.source_partition
                last_key = encode_offset_key(connector, last_partition)
            pending[last_key] = (last_partition, record.source_offset)
        self.records_sent += len(records)

    def on_pause(self) -> None:
        self.commit_offsets()

    def on_stop_requested(self) -> None:
        try:
            self.task.stop()
        except Exception as exc:
            _log.warning("task.stop_failed", connector=self.id.connector, task=self.id.task, error=repr(exc))

    def close(self, failed: bool) -> None:
        try:
            if self.producer is not None:
                if failed:
                    self.abandon()
                else:
                    self.commit_offsets()
        finally:
            if not self.stopping:
                self.on_stop_requested()
            if self.producer is not None:
                started = time.monotonic()
                self.producer.flush(5 if not failed else 0)
                _log.info(
                    "task.closed",
                    connector=self.id.connector,
                    task=self.id.task,
                    failed=failed,
                    records_sent=self.records_sent,
                    close_s=round(time.monotonic() - started, 3),
                )
