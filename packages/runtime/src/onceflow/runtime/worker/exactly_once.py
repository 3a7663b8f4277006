"""ExactlyOnceWorkerSourceTask: records and their source offsets in one Kafka transaction (KIP-618).

Each task owns one transactional producer, ``transactional.id = onceflow-src-<connector>-<task>``.
A second instance of the same task fences the first when it initializes its producer: the broker
bumps the epoch and aborts the first one's open transaction, and every later call of the first one
fails with PRODUCER_FENCED, so it gets no record in.

Transaction boundary (``transaction.boundary``): ``poll`` commits after every non-empty poll;
``interval`` commits every ``transaction.boundary.interval.ms``.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from confluent_kafka import KafkaException, Producer

from onceflow.core import defaults
from onceflow.core.kafka import RetryPolicy, produce, raise_if_fenced, retry_transient, transactional_producer_config
from onceflow.core.logging import get_logger
from onceflow.runtime.api.source import SourceRecord
from onceflow.runtime.config.connector_config import TRANSACTION_BOUNDARY, TRANSACTION_BOUNDARY_INTERVAL_MS
from onceflow.runtime.exceptions import TaskFailed
from onceflow.runtime.status import ProducerProgress
from onceflow.runtime.storage.offsets import encode_offset_value
from onceflow.runtime.worker.metrics import WorkerMetrics
from onceflow.runtime.worker.producer_stats import ProducerStats
from onceflow.runtime.worker.source_task import AbstractWorkerSourceTask

_log = get_logger(__name__)


def transactional_id(connector: str, task: int) -> str:
    return f"onceflow-src-{connector}-{task}"


class ExactlyOnceWorkerSourceTask(AbstractWorkerSourceTask):
    #: How long a transactional call may take before the task fails.
    txn_call_timeout_s = 60.0

    def __init__(self, *args: Any, offsets_topic: str, metrics: WorkerMetrics, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offsets_topic = offsets_topic
        self.metrics = metrics
        self.transactional_id = transactional_id(self.id.connector, self.id.task)
        self.boundary = self.connector_config.get_str(TRANSACTION_BOUNDARY)
        self.interval_s = self.connector_config.get_int(TRANSACTION_BOUNDARY_INTERVAL_MS) / 1000
        self.in_transaction = False
        self.transaction_started = 0.0
        self.records_in_transaction = 0
        self.stats = ProducerStats()
        self.committed = 0
        self.aborted = 0
        self.records_committed = 0
        self._labels = (self.id.connector, str(self.id.task))

    def producer_progress(self) -> ProducerProgress:
        return ProducerProgress(
            transactional_id=self.transactional_id,
            producer_id=self.stats.producer_id,
            producer_epoch=self.stats.producer_epoch,
            idempotence_state=self.stats.idempotence_state,
            transaction_state=self.stats.transaction_state,
            transactions_committed=self.committed,
            transactions_aborted=self.aborted,
            records_produced=self.records_committed,
            records_in_transaction=self.records_in_transaction,
        )

    def _on_stats(self, stats_json: str) -> None:
        self.stats = ProducerStats.parse(stats_json)
        self.metrics.producer(self.id, self.stats)

    # -- hooks ------------------------------------------------------------------------------------------

    def create_producer(self) -> Producer:
        base: dict[str, Any] = {
            "transaction.timeout.ms": defaults.KAFKA_TRANSACTION_TIMEOUT_MS,
            "statistics.interval.ms": 1000,
            **self.producer_config,
        }
        return Producer(transactional_producer_config(base, self.transactional_id, stats_cb=self._on_stats))

    def prepare_to_initialize_task(self) -> None:
        """Step 1 of startup: ``init_transactions`` fences every older instance of this task and aborts
        its open transaction, so the offsets read next (read_committed) are final. A transaction
        coordinator that is down, loading or moving is waited for (librdkafka allows calling it again)."""
        producer = self.producer
        assert producer is not None
        started = time.monotonic()
        try:
            retry_transient(
                lambda: producer.init_transactions(self.txn_call_timeout_s),
                what=f"init_transactions of {self.transactional_id}",
                policy=RetryPolicy(timeout_s=self.txn_call_timeout_s),
            )
        except KafkaException as exc:
            raise_if_fenced(exc, self.transactional_id)
            raise
        producer.poll(0)
        _log.info(
            "task.producer_initialized",
            connector=self.id.connector,
            task=self.id.task,
            transactional_id=self.transactional_id,
            init_s=round(time.monotonic() - started, 3),
        )

    def before_dispatch(self, records: list[SourceRecord]) -> None:
        if not self.in_transaction:
            assert self.producer is not None
            self.producer.begin_transaction()
            self.in_transaction = True
            self.transaction_started = time.monotonic()
        self.records_in_transaction += len(records)

    def batch_dispatched(self, records: list[SourceRecord]) -> None:
        if records:
            self.metrics.records.labels(*self._labels).inc(len(records))
            if self.boundary == "poll":
                self.commit_offsets()

    def begin_send_iteration(self) -> None:
        if self.in_transaction and time.monotonic() - self.transaction_started >= self.interval_s:
            self.commit_offsets()

    def commit_offsets(self) -> None:
        """Commit the open transaction with the task's source offsets in it.

        Steps:
            1. Nothing is open: nothing to do.
            2. Produce one offsets-topic record per source partition touched in this transaction
               (key ``[connector, partition]``, value the offset of its last record), in the transaction.
            3. ``commit_transaction``: librdkafka flushes every record, then the broker writes COMMIT
               markers to every partition of the transaction, the offsets partition included.
            4. On success, count it and tell the task (``SourceTask.commit``).
            5. On failure: fenced -> ProducerFenced (a newer instance owns the task); retriable -> retry;
               otherwise abort and fail the task, whose restart resumes from the committed offsets. A
               newer instance can also show only in the abort's answer: Apache Kafka 4.3 answers an
               EndTxn that races a newer instance's epoch fence with UNKNOWN_SERVER_ERROR (its log:
               "transition to ONGOING while it already a pending state PREPARE_EPOCH_FENCE"), and the
               abort that follows with PRODUCER_FENCED; that is ProducerFenced too.
        """
        # Step 1
        if not self.in_transaction:
            return
        producer = self.producer
        assert producer is not None
        started = time.monotonic()
        # Step 2
        for key, (_, offset) in self.pending_offsets.items():
            produce(producer, self.offsets_topic, value=encode_offset_value(offset), key=key)
        # Step 3
        while True:
            try:
                producer.commit_transaction(self.txn_call_timeout_s)
                break
            except KafkaException as exc:
                # Step 5
                raise_if_fenced(exc, self.transactional_id)
                error = exc.args[0]
                if error.retriable():
                    continue
                if error.txn_requires_abort() and (refused := self._abort()) is not None:
                    raise_if_fenced(refused, self.transactional_id)
                raise TaskFailed(
                    f"commit of {self.transactional_id} failed: {error.str()}; resuming from the committed offsets"
                ) from exc
        # Step 4
        self.in_transaction = False
        self.committed += 1
        self.records_committed += self.records_in_transaction
        self.records_in_transaction = 0
        self.pending_offsets.clear()
        elapsed = time.monotonic() - started
        self.metrics.transactions.labels(*self._labels, "committed").inc()
        self.metrics.commit_seconds.labels(*self._labels).observe(elapsed)
        if self.committed == 1 or self.committed % 1000 == 0:
            _log.info(
                "task.transaction_committed",
                connector=self.id.connector,
                task=self.id.task,
                transactional_id=self.transactional_id,
                pid=self.stats.producer_id,
                epoch=self.stats.producer_epoch,
                transactions=self.committed,
                records=self.records_committed,
            )
        self.task.commit()

    def abandon(self) -> None:
        """Abort the open transaction (best effort: a fenced producer cannot, and the broker aborts it)."""
        self._abort()

    def _abort(self) -> KafkaException | None:
        """:meth:`abandon`, returning the abort's error if it failed, for a caller that wants to know why."""
        if not self.in_transaction or self.producer is None:
            return None
        self.in_transaction = False
        self.records_in_transaction = 0
        self.pending_offsets.clear()
        self.aborted += 1
        self.metrics.transactions.labels(*self._labels, "aborted").inc()
        try:
            self.producer.abort_transaction(self.txn_call_timeout_s)
        except KafkaException as exc:
            _log.warning("task.abort_failed", transactional_id=self.transactional_id, error=str(exc))
            return exc
        return None


def fence_zombies(client_config: dict[str, Any], connector: str, tasks: int, timeout: float = 60) -> None:
    """Fence every instance of the connector's tasks (and abort their open transactions) by
    initializing a producer with each task's transactional id, as Kafka Connect does before it
    alters the offsets of an exactly-once connector."""
    for task in range(tasks):
        producer = Producer(transactional_producer_config(client_config, transactional_id(connector, task)))
        retry_transient(
            functools.partial(producer.init_transactions, timeout),
            what=f"init_transactions of {transactional_id(connector, task)}",
            policy=RetryPolicy(timeout_s=timeout),
        )
        producer.flush(0)
        _log.info("task.fenced", connector=connector, task=task, transactional_id=transactional_id(connector, task))
