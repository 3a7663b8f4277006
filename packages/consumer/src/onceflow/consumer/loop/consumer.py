"""The results consumer: a consumer-group member that stores its topics into tables of the results store."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from onceflow.consumer.exceptions import RecordRejected, StaleOffsets, UndecodableResult
from onceflow.consumer.feed import ResultsFeed, ResultsUpdate
from onceflow.consumer.loop.metrics import ConsumerMetrics
from onceflow.consumer.loop.pending import PendingBatch, TopicPartitionKey
from onceflow.consumer.loop.router import TableRouter
from onceflow.consumer.settings import ConsumerLoopSettings
from onceflow.consumer.store import ResultBatch, ResultsStore
from onceflow.consumer.tables import StoredTables
from onceflow.core.kafka import with_fetch_defaults
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings

_log = get_logger(__name__)


def default_owner() -> str:
    """``<host>:<pid>``: names the instance in the store's offsets and in logs."""
    return f"{socket.gethostname()}:{os.getpid()}"


class ResultsConsumer:
    """Reads the stored topics with read_committed and applies each batch, the rows of every table
    and the offsets, in one database transaction (docs/design.md, "ip_count_sink -> consumer").

    Guarantees:

    - every stored table always holds exactly the records before the stored offsets: a crash at any
      moment loses the open batch only, and it is re-read from the stored offsets (append tables
      included: the offsets, not a key, tell which records are stored);
    - a record that cannot be stored (undecodable, or not fitting its table) is logged with its
      topic, partition, offset and reason, counted, and skipped (or, where the table says so, stops
      the consumer with :class:`UndecodableResult`);
    - aborted and open transactions are never read (``isolation.level=read_committed``);
    - Kafka group offsets are committed after the database, for lag monitoring only
      (``enable.auto.commit=false``); on assignment the consumer seeks to the database's offsets;
    - instances of one group split the partitions; a revoked partition's open batch is committed
      before it is released, and a batch built on offsets another instance has moved meanwhile is
      rolled back (:class:`StaleOffsets`) and re-read, so no batch is ever applied twice.

    :meth:`run` is the loop (blocking); :meth:`start`/:meth:`stop` run it on a thread.
    """

    def __init__(
        self,
        kafka: KafkaSettings,
        settings: ConsumerLoopSettings,
        store: ResultsStore,
        *,
        tables: StoredTables,
        feed: ResultsFeed | None = None,
        metrics: ConsumerMetrics | None = None,
        owner: str | None = None,
    ) -> None:
        self.kafka = kafka
        self.settings = settings
        self.store = store
        self.feed = feed
        self.metrics = metrics or ConsumerMetrics()
        self.owner = owner or default_owner()
        self.tables = tables
        if not len(self.tables):
            raise ValueError("nothing to consume: no stored topics (no extension stores one and there are no tables)")
        self.topics = self.tables.topics
        self._topics_label = ",".join(self.topics)
        self.group = settings.group_id
        self.router = TableRouter(self.tables, store, kafka)
        #: Stored next offset of every owned partition (None: nothing stored yet): what the next batch expects.
        self._positions: dict[TopicPartitionKey, int | None] = {}
        self._pending = PendingBatch()
        self._consumer: Consumer | None = None
        self._batch_number = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None
        self.stopped = threading.Event()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> ResultsConsumer:
        """Run the loop on a thread; :attr:`stopped` is set when it ends (``failure`` says why, if it failed)."""
        self._thread = threading.Thread(target=self._run_guarded, name="results-consumer", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the loop to finish: it commits the open batch, leaves the group and returns."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run_guarded(self) -> None:
        try:
            self.run()
        except BaseException as exc:
            self.failure = exc
            _log.exception("consumer.failed", group=self.group, topics=self._topics_label, owner=self.owner, error=exc)
        finally:
            self.stopped.set()

    def _client_config(self) -> dict[str, Any]:
        overrides: dict[str, object] = {
            "group.id": self.group,
            "client.id": f"onceflow-consumer-{self.owner}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
        }
        if self.settings.group_instance_id:
            overrides["group.instance.id"] = self.settings.group_instance_id
        return with_fetch_defaults(self.kafka.client_config(**overrides))

    def run(self) -> None:
        """Consume until :meth:`stop`: accumulate records, apply a batch when it is full or old enough."""
        consumer = Consumer(self._client_config())
        self._consumer = consumer
        consumer.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        _log.info(
            "consumer.started", group=self.group, topics=self._topics_label, owner=self.owner,
            store=self.store.description,
        )  # fmt: skip
        max_records = self.settings.max_batch_records
        timeout = self.settings.poll_timeout_ms / 1000
        try:
            while not self._stop.is_set():
                wanted = max(1, max_records - self._pending.records)
                for message in consumer.consume(num_messages=wanted, timeout=timeout):
                    self._take(message)
                if self._pending.records >= max_records or (
                    self._pending.records and self._pending.age_ms() >= self.settings.max_batch_ms
                ):
                    self._flush()
            self._flush()
        finally:
            # close() revokes the assignment (the revoke callback flushes) and leaves the group.
            consumer.close()
            self._consumer = None
            _log.info("consumer.stopped", group=self.group, topics=self._topics_label, owner=self.owner)

    def _take(self, message: Message) -> None:
        error = message.error()
        if error is not None:
            if error.fatal():
                raise KafkaException(error)
            if error.code() != KafkaError._PARTITION_EOF:
                _log.warning("consumer.kafka_error", group=self.group, code=error.name(), reason=error.str())
            return
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        if topic is None or partition is None or offset is None or (topic, partition) not in self._positions:
            return  # a record of a partition this instance no longer owns
        try:
            row = self.router.route(topic, message.value())
        except RecordRejected as exc:
            self.metrics.undecodable.labels(topic, str(partition)).inc()
            table = self.tables.by_topic(topic)
            name = table.table if table is not None else ""
            if table is None or not table.skip_undecodable:
                raise UndecodableResult(topic, partition, offset, exc.reason, name) from None
            _log.error("record.skipped", topic=topic, partition=partition, offset=offset, table=name, reason=exc.reason)
            row = None
        self._pending.add(topic, partition, offset, row)

    # ---------------------------------------------------------------- batches

    def _flush(self) -> None:
        """Apply the open batch with its offsets (see :meth:`ResultsStore.apply`), then publish it.

        Steps:
            1. Build the batch from the pending records, each partition expecting its stored offset.
            2. Apply rows and offsets in one database transaction. On :class:`StaleOffsets` (another
               instance moved a partition) nothing was applied: re-seek every partition of the batch
               to its stored offset and return.
            3. Move the expected offsets forward; publish the rows to the Results API's watchers.
            4. Commit the same offsets to the Kafka group (monitoring only; failures are logged).
        """
        if not self._pending.records:
            return
        # Step 1
        self._batch_number += 1
        ranges = self._pending.offset_ranges()
        batch = self._pending.to_batch(self.group, self.owner, self._positions)
        self._pending.clear()
        # Step 2
        started = time.monotonic()
        try:
            self.store.apply(batch)
        except StaleOffsets as exc:
            self.metrics.batches.labels("stale").inc()
            _log.warning(
                "batch.stale", batch=self._batch_number, topic=exc.topic, partition=exc.partition,
                expected=exc.expected, stored=exc.stored, owner=self.owner,
            )  # fmt: skip
            self._reseek([(part.topic, part.partition) for part in batch.partitions])
            return
        elapsed = time.monotonic() - started
        # Step 3
        for part in batch.partitions:
            self._positions[(part.topic, part.partition)] = part.next_offset
            self.metrics.records_applied.labels(part.topic, str(part.partition)).inc(len(part.rows))
        self.metrics.batches.labels("applied").inc()
        self.metrics.batch_seconds.observe(elapsed)
        _log.info(
            "batch.applied", batch=self._batch_number, records=batch.records, owner=self.owner,
            offsets=",".join(f"{t}[{p}]:{lo}-{hi}" for (t, p), (lo, hi) in ranges.items()),
            ms=round(elapsed * 1000, 1),
        )  # fmt: skip
        if self.feed is not None:
            offsets: dict[str, dict[int, int]] = {}
            for (topic, partition), offset in self._positions.items():
                if offset is not None:
                    offsets.setdefault(topic, {})[partition] = offset
            rows = {table: tuple(found) for table, found in batch.rows_by_table().items()}
            self.feed.publish(ResultsUpdate(rows, offsets))
        # Step 4
        self._commit_group_offsets(batch)

    def _commit_group_offsets(self, batch: ResultBatch) -> None:
        consumer = self._consumer
        if consumer is None:
            return
        offsets = [TopicPartition(part.topic, part.partition, part.next_offset) for part in batch.partitions]
        for tp in offsets:
            try:
                _, high = consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                continue
            if high >= 0:
                self.metrics.lag.labels(tp.topic, str(tp.partition)).set(max(0, high - tp.offset))
        if not self.settings.commit_group_offsets:
            return
        try:
            consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            _log.warning("group_offsets.commit_failed", group=self.group, error=exc.args[0].str())

    def _reseek(self, partitions: Sequence[TopicPartitionKey]) -> None:
        stored = {topic: self.store.stored_offsets(self.group, topic) for topic in {t for t, _ in partitions}}
        consumer = self._consumer
        for topic, partition in partitions:
            if (topic, partition) not in self._positions:
                continue
            found = stored[topic].get(partition)
            self._positions[(topic, partition)] = found.next_offset if found is not None else None
            offset = found.next_offset if found is not None else OFFSET_BEGINNING
            if consumer is not None:
                consumer.seek(TopicPartition(topic, partition, offset))
            _log.info("partition.reseek", topic=topic, partition=partition, offset=offset, owner=self.owner)

    # ---------------------------------------------------------------- rebalance callbacks

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Take over ``partitions`` where the store says they were applied up to.

        Steps:
            1. Look up the group's stored offsets in the results store (the truth, not Kafka's).
            2. Start each partition at its stored next offset; a partition never applied starts
               from the beginning. Remember the stored offset as what the next batch expects.
            3. Assign the partitions with those offsets.
        """
        self.metrics.rebalances.labels("assign").inc()
        # Step 1
        stored = {topic: self.store.stored_offsets(self.group, topic) for topic in {tp.topic for tp in partitions}}
        # Step 2
        for tp in partitions:
            found = stored[tp.topic].get(tp.partition)
            tp.offset = found.next_offset if found is not None else OFFSET_BEGINNING
            self._positions[(tp.topic, tp.partition)] = found.next_offset if found is not None else None
        # Step 3
        consumer.assign(partitions)
        self.metrics.assigned.set(len(self._positions))
        _log.info(
            "partitions.assigned", group=self.group, topics=self._topics_label, owner=self.owner,
            offsets=",".join(f"{tp.topic}[{tp.partition}]:{self._positions[(tp.topic, tp.partition)]}"
                             for tp in partitions) or "-",
        )  # fmt: skip

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Release ``partitions`` after committing what was read from them.

        Steps:
            1. Apply the open batch (all its partitions are still owned until this returns).
            2. Forget the revoked partitions' positions.
            3. Unassign.
        """
        self.metrics.rebalances.labels("revoke").inc()
        # Step 1
        self._flush()
        # Step 2
        for tp in partitions:
            self._positions.pop((tp.topic, tp.partition), None)
        # Step 3
        consumer.unassign()
        self.metrics.assigned.set(len(self._positions))
        _log.info(
            "partitions.revoked", group=self.group, topics=self._topics_label, owner=self.owner,
            partitions=",".join(f"{tp.topic}[{tp.partition}]" for tp in partitions) or "-",
        )  # fmt: skip

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """``partitions`` were lost (session timeout): another instance may own them already, so the
        open batch's records of them are dropped, not applied; the new owner re-reads them."""
        self.metrics.rebalances.labels("lost").inc()
        lost = {(tp.topic, tp.partition) for tp in partitions}
        self._pending.drop(lost)
        for key in lost:
            self._positions.pop(key, None)
        consumer.unassign()
        self.metrics.assigned.set(len(self._positions))
        _log.warning(
            "partitions.lost", group=self.group, topics=self._topics_label, owner=self.owner,
            partitions=",".join(f"{t}[{p}]" for t, p in sorted(lost)) or "-",
        )  # fmt: skip
