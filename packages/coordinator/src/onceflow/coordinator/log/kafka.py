"""The transaction log on a compacted Kafka topic, written by a transactional producer with a fixed id.

The fixed ``transactional.id`` is what makes a standby take-over safe: when a new coordinator
instance calls ``init_transactions``, the broker bumps the producer epoch, aborts whatever the
previous instance had open, and fences it, so the zombie's next write fails with a fatal
``PRODUCER_FENCED`` error and it stops serving. Replay reads the topic with ``read_committed``, so
writes the zombie never committed are invisible.

The log fails closed (:mod:`~onceflow.coordinator.log.refusals`): its first record is a genesis
marker, written once when the log is initialised; a topic that is missing, empty, or whose head is
gone is refused, never re-created or started over silently.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, Literal

from confluent_kafka import KafkaError, KafkaException, Producer

from onceflow.contract import TransactionState
from onceflow.coordinator.exceptions import CoordinatorFenced, LogAppendRejected, TransactionLogError
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.log_topic import LogTopic
from onceflow.coordinator.log.records import LogMarker, LogRecord, Tombstone, WireRecord, decode, encode
from onceflow.coordinator.log.refusals import LogNotInitialised, LogTopicLost, LogTruncated
from onceflow.coordinator.model import Transaction
from onceflow.core.kafka import (
    Replication,
    RetryPolicy,
    is_fenced,
    produce,
    read_to_end,
    retry_transient,
    transactional_producer_config,
)
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import COORDINATOR_LOG_TOPIC

DEFAULT_TRANSACTIONAL_ID: Final = "onceflow-coordinator"
#: The group-id prefix of the replay's reader (the ACLs grant it to the coordinator).
REPLAY_GROUP_PREFIX: Final = "onceflow-coordinator-replay-"
#: Largest append (sum of encoded keys and values) the log accepts; below librdkafka's and the
#: broker's default ``message.max.bytes`` (1,000,000), so a too-large append is refused before it
#: is produced and fails only its request.
MAX_APPEND_BYTES: Final = 900_000
_TOO_LARGE_CODES: Final = frozenset({KafkaError.MSG_SIZE_TOO_LARGE})

_log = get_logger(__name__)


def _lost(topic_checked: Callable[[], object]) -> LogTopicLost | None:
    """The :class:`LogTopicLost` that the topic check found, if it found one (other check errors are not
    the cause of a failed append, so they are left to the append's own error)."""
    try:
        topic_checked()
    except LogTopicLost as lost:
        return lost
    except Exception:  # see the docstring
        return None
    return None


def _kafka_error(exc: KafkaException) -> KafkaError | None:
    error = exc.args[0] if exc.args else None
    return error if isinstance(error, KafkaError) else None


@dataclass(frozen=True, slots=True)
class LogContents:
    """What a log topic holds, as :meth:`KafkaTransactionLog.inspect` read it."""

    exists: bool
    #: Committed records, the log's own markers included.
    records: int = 0
    #: The first record is the genesis marker.
    initialised: bool = False
    start_offset: int = 0


class KafkaTransactionLog(TransactionLog):
    """A :class:`TransactionLog` on ``topic`` (one partition, ``cleanup.policy=compact``).

    Every :meth:`append` is one Kafka transaction. ``timeout`` bounds each operation (topic
    creation, init, one append, replay); within it, transient errors (a broker down, the transaction
    coordinator or the partition's leader moving) are retried. ``replication_factor`` (None: the
    cluster default of ``kafka.replication_factor``, else ``min(3, brokers)``) is the topic's when
    this log creates it. The topic must stay the one :meth:`open` verified (see
    :mod:`~onceflow.coordinator.log.log_topic`): it is checked before every append commits and
    after it, and the producer never auto-creates it.
    """

    def __init__(
        self,
        kafka: KafkaSettings,
        *,
        topic: str = COORDINATOR_LOG_TOPIC,
        transactional_id: str = DEFAULT_TRANSACTIONAL_ID,
        replication_factor: int | None = None,
        timeout: float = 30.0,
        transaction_timeout_ms: int = 60_000,
        init_if_missing: bool = False,
    ) -> None:
        self._kafka = kafka
        self._init_if_missing = init_if_missing
        #: Names this instance in its markers (genesis, owner).
        self.instance = uuid.uuid4().hex[:12]
        self.topic = topic
        self.transactional_id = transactional_id
        self._timeout = timeout
        self._retry = RetryPolicy(timeout_s=timeout)
        self._transaction_timeout_ms = transaction_timeout_ms
        self._producer: Producer | None = None
        self._fenced: CoordinatorFenced | None = None
        replication = Replication.of(kafka)
        if replication_factor is not None:
            replication = Replication(
                replication_factor, kafka.min_insync_replicas, "transaction_log.replication_factor"
            )
        self._topic = LogTopic(kafka.client_config(), topic, replication=replication, timeout=timeout)
        #: Runs the topic check before an append while its records are produced (appends are serial).
        self._checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="txnlog-topic-check")

    @property
    def description(self) -> str:
        return f"kafka topic {self.topic} at {self._kafka.bootstrap_servers} (transactional.id {self.transactional_id})"

    def open(self) -> list[LogRecord]:
        """Make this instance the log's only writer, then return the committed records.

        Steps:
            1. Check the topic: a missing one is :class:`LogTopicMissing` (created only with
               ``init_if_missing``); a configuration that could delete or lose decisions is
               :class:`LogTopicMisconfigured`.
            2. ``init_transactions`` with the fixed transactional id: the broker fences every earlier
               instance and aborts its open transaction, so nothing it did not commit is replayed.
            3. Read the partition with ``read_committed`` from the beginning up to its end offset.
            4. Fail closed: a log start offset above 0 (records deleted from the head) or a first
               record that is not the genesis marker is :class:`LogTruncated`; an empty log is
               :class:`LogNotInitialised`, unless ``init_if_missing``: then the genesis is written.
        """
        # Step 1
        self._topic.ensure(create=self._init_if_missing)
        # Step 2
        overrides = {
            "acks": "all",
            "linger.ms": 0,
            "transaction.timeout.ms": self._transaction_timeout_ms,
            "allow.auto.create.topics": False,
        }
        producer = Producer(
            transactional_producer_config(self._kafka.client_config(), self.transactional_id, **overrides)
        )
        try:
            retry_transient(
                lambda: producer.init_transactions(self._timeout),
                what=f"init_transactions of {self.transactional_id}",
                policy=self._retry,
            )
        except KafkaException as exc:
            raise TransactionLogError(f"cannot initialise the log producer on {self.description}: {exc}") from None
        self._producer = producer
        # Step 3
        wire = self._replay()
        # Step 4
        self._check_head(wire)
        if not wire:
            self.append_marker("genesis")
            _log.warning("txnlog.initialised", topic=self.topic, topic_id=self._topic.topic_id, instance=self.instance)
        records = [record for record in wire if not isinstance(record, LogMarker)]
        _log.info(
            "txnlog.opened",
            topic=self.topic,
            topic_id=self._topic.topic_id,
            transactional_id=self.transactional_id,
            instance=self.instance,
            records=len(records),
        )
        return records

    def check_topic(self) -> None:
        """Step 1 of :meth:`open` alone, fencing nobody: what a standby checks when it starts."""
        self._topic.ensure(create=self._init_if_missing)

    def inspect(self) -> LogContents:
        """What the topic holds, read with ``read_committed`` and without the producer: no instance
        is fenced (``onceflow txn init-log`` and ``rebuild`` look before they write)."""
        if not self._topic.exists():
            return LogContents(exists=False)
        wire = self._replay()
        initialised = bool(wire) and isinstance(wire[0], LogMarker) and wire[0].kind == "genesis"
        return LogContents(True, len(wire), initialised, self._topic.start_offset())

    def _check_head(self, wire: list[WireRecord]) -> None:
        """Step 4 of :meth:`open`: refuse a log whose head is gone, or an empty one unless asked to initialise it."""
        start = self._topic.start_offset()
        if start > 0:
            raise LogTruncated(self.topic, f"its log start offset is {start}: the records before it were deleted")
        if wire and not (isinstance(wire[0], LogMarker) and wire[0].kind == "genesis"):
            raise LogTruncated(
                self.topic,
                f"its first record is not the genesis marker but {type(wire[0]).__name__}: the topic was re-created "
                "and written by something else, or its head is gone",
            )
        if not wire and not self._init_if_missing:
            raise LogNotInitialised(self.topic, "holds no decisions and no genesis record")

    def append_marker(self, kind: Literal["genesis", "owner"]) -> None:
        """Write a :class:`LogMarker` of ``kind`` from this instance (raises as :meth:`append` does)."""
        self._append_wire([LogMarker(kind, self.instance, time.time())])

    def _replay(self) -> list[WireRecord]:
        """The committed records, up to the last stable offset at the start (:func:`read_to_end`)."""
        try:
            records = read_to_end(
                self._kafka.client_config(),
                self.topic,
                until="last_stable",
                timeout=self._timeout,
                policy=self._retry,
                group_prefix=REPLAY_GROUP_PREFIX,
            )
            return [decode(record.key or b"", record.value) for record in records]
        except (KafkaException, TimeoutError) as exc:
            raise TransactionLogError(f"replay of {self.topic} failed: {exc}") from None

    def append(self, records: Sequence[LogRecord]) -> None:
        """Write ``records`` in one Kafka transaction (see :meth:`_append_wire`)."""
        self._append_wire(records)

    def confirm_owner(self) -> None:
        """Write an ``owner`` marker: it fails with :class:`CoordinatorFenced` once a newer instance owns the log."""
        self.append_marker("owner")

    def _append_wire(self, records: Sequence[WireRecord]) -> None:
        """Write ``records`` in one Kafka transaction.

        Steps:
            1. Refuse records larger than :data:`MAX_APPEND_BYTES` with :class:`LogAppendRejected`
               (nothing is written; only this request fails), and start checking that the topic is
               still the one :meth:`open` verified, in the background: the check's round trip
               overlaps Step 2. Records that are only bookkeeping (:func:`_bookkeeping`: PREPARING,
               COMMITTED, tombstones) skip the checks of Steps 3 and 5: no decision rests on them,
               and the next append that holds one checks the topic before it commits, so a topic
               lost meanwhile is still found before any decision is written to it.
            2. Begin a transaction and produce every record (key, JSON value or tombstone).
            3. Wait for Step 1's check: a lost topic aborts the transaction and raises
               :class:`LogTopicLost`, also when the produce or the abort failed first because of it.
               Then commit. An abortable error aborts and retries from
               Step 2; a retriable one retries the commit; both until ``timeout``. A record the
               producer or broker finds too large aborts and raises :class:`LogAppendRejected`.
            4. A fenced producer raises :class:`CoordinatorFenced`; a fatal error or running out of
               time raises :class:`TransactionLogError` (the outcome is unknown).
            5. Check the topic again: deleted or re-created during the append raises
               :class:`LogTopicLost` (the decision may be in a topic that lost the earlier ones).
        """
        if self._fenced is not None:
            raise self._fenced
        producer = self._producer
        if producer is None:
            raise TransactionLogError("the log is not open")
        encoded = [encode(record) for record in records]
        # Step 1
        _check_size(encoded)
        if records and all(_bookkeeping(record) for record in records):
            self._append(producer, encoded, lambda: None)
            return
        checked = self._checks.submit(self._topic.check, "before an append")
        self._append(producer, encoded, checked.result)
        # Step 5
        self._topic.check("during an append")

    def _append(
        self, producer: Producer, encoded: list[tuple[bytes, bytes | None]], topic_checked: Callable[[], object]
    ) -> None:
        deadline = time.monotonic() + self._timeout
        last_error: KafkaException | None = None
        while time.monotonic() < deadline:
            try:
                # Step 2
                producer.begin_transaction()
                for key, value in encoded:
                    produce(producer, self.topic, key=key, value=value, partition=0)
                # Step 3
                try:
                    topic_checked()
                except BaseException:
                    self._abort_quietly(producer)  # if it fails, the handler below still names a lost topic
                    raise
                self._commit(producer, deadline)
                return
            except KafkaException as exc:
                last_error = exc
                lost = _lost(topic_checked)
                if lost is not None:  # a deleted topic also fails the produce: name the deletion
                    raise lost from None
                error = _kafka_error(exc)
                if error is not None and error.code() in _TOO_LARGE_CODES and not error.fatal():
                    self._abort_quietly(producer)
                    raise LogAppendRejected(f"{self.topic} refused the log records: {exc}") from None
                # Step 4
                if error is not None and is_fenced(error):
                    self._fenced = CoordinatorFenced(f"{self.transactional_id} on {self.topic}: {exc}")
                    _log.error("txnlog.fenced", topic=self.topic, transactional_id=self.transactional_id, error=exc)
                    raise self._fenced from None
                if error is None or error.fatal():
                    raise TransactionLogError(f"the log producer failed fatally on {self.topic}: {exc}") from None
                if error.txn_requires_abort():
                    _log.warning("txnlog.append_aborted", topic=self.topic, error=exc)
                    self._abort_quietly(producer)
                    continue
                raise TransactionLogError(f"append to {self.topic} failed: {exc}") from None
        raise TransactionLogError(f"append to {self.topic} did not complete in {self._timeout}s: {last_error}")

    def _commit(self, producer: Producer, deadline: float) -> None:
        while True:
            try:
                producer.commit_transaction(max(0.1, deadline - time.monotonic()))
                return
            except KafkaException as exc:
                error = _kafka_error(exc)
                if error is not None and error.retriable() and time.monotonic() < deadline:
                    continue
                raise

    def _abort_quietly(self, producer: Producer) -> None:
        try:
            producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            error = _kafka_error(exc)
            if error is None or is_fenced(error) or error.fatal():
                raise

    def close(self) -> None:
        """Release the producer. Best effort: every append already finished, and a fenced or failed
        producer (whose last append was cut short) raises its fatal error from ``flush``; closing
        must still succeed, so that the process exits with the code that says why it stopped."""
        self._checks.shutdown(wait=False, cancel_futures=True)
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.flush(1.0)
            except KafkaException as exc:
                _log.warning("txnlog.close_unflushed", topic=self.topic, error=exc)


def _bookkeeping(record: WireRecord) -> bool:
    """Whether ``record`` is one no decision rests on: a PREPARING attempt (presumed abort does not
    need it), END (a restart delivers Commit again without it) or a tombstone of a final one."""
    if isinstance(record, Tombstone):
        return True
    return isinstance(record, Transaction) and record.state in (TransactionState.PREPARING, TransactionState.COMMITTED)


def _check_size(encoded: Sequence[tuple[bytes, bytes | None]]) -> None:
    """Raise :class:`LogAppendRejected` when the encoded records are more than one append takes."""
    size = sum(len(key) + len(value or b"") for key, value in encoded)
    if size > MAX_APPEND_BYTES:
        raise LogAppendRejected(f"the log records are {size} bytes, more than the {MAX_APPEND_BYTES} one append takes")
