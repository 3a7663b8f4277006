"""The Kafka topic sink participant: a transactional producer per (sink, job)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from onceflow.core.avro import IP_COUNT_SERDE, IpCount
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings
from onceflow.core.staging import StagedFile
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC
from onceflow.sinks.base import SinkParticipant, TxnId, load_batch
from onceflow.sinks.exceptions import PrepareRejected, TransactionAlreadyCommitted, TransactionNotPrepared
from onceflow.sinks.kafka.journal import PreparedJournal
from onceflow.sinks.kafka.markers import ensure_topics, marker_key, marker_value, read_last_committed

_log = get_logger(__name__)

DeliveryCallback = Callable[[KafkaError | None, Message], None]


@dataclass
class _JobProducer:
    """The transactional producer of one job, its open transaction and the job's last committed batch."""

    producer: Producer
    transactional_id: str
    last_committed: int
    open_txn: TxnId | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class KafkaParticipant(SinkParticipant):
    """Writes results to a Kafka topic (``ip_count_sink``) in Kafka transactions, with commit markers.

    Each job gets a transactional producer (``transactional.id = onceflow-sink-<sink>-<job>``),
    whose ``init_transactions`` runs once per participant life and aborts whatever a predecessor
    left open. One transaction is open at a time per sink and job: a job's batches are sequential,
    so a prepare for another batch while one is open votes no.

    A transaction holds the batch's rows (key = ip, value = IpCount single-object encoding,
    timestamp = window_start) and a marker record (key ``<sink>:<job>``, value = batch) in the
    compacted commits topic. The open Kafka transaction is only a fast path: the durable prepared
    state is the staged files, listed per transaction in a :class:`PreparedJournal`. After a
    restart, commit redoes the batch from its staged files in a new transaction unless the commits
    topic already shows it (or a later batch) committed, so redo is idempotent.
    """

    def __init__(
        self,
        name: str,
        kafka: KafkaSettings,
        *,
        state_dir: str | Path,
        topic: str = SINK_TOPIC,
        commits_topic: str = SINK_COMMITS_TOPIC,
        transaction_timeout_ms: int = 60_000,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__(name)
        self.kafka = kafka
        self.topic = topic
        self.commits_topic = commits_topic
        self._transaction_timeout_ms = transaction_timeout_ms
        self._timeout_s = timeout_s
        self._journal = PreparedJournal(state_dir, name)
        self._producers: dict[str, _JobProducer] = {}
        self._producers_lock = threading.Lock()
        ensure_topics(kafka, topic, commits_topic, timeout=timeout_s)

    def transactional_id(self, job: str) -> str:
        return f"onceflow-sink-{self.name}-{job}"

    def _job(self, job: str) -> _JobProducer:
        """The job's producer, created (``init_transactions``) on first use in this participant's life."""
        with self._producers_lock:
            current = self._producers.get(job)
            if current is None:
                current = self._new_producer(job)
                self._producers[job] = current
            return current

    def _new_producer(self, job: str) -> _JobProducer:
        transactional_id = self.transactional_id(job)
        producer = Producer(
            self.kafka.client_config(
                **{
                    "transactional.id": transactional_id,
                    "enable.idempotence": True,
                    "acks": "all",
                    "transaction.timeout.ms": self._transaction_timeout_ms,
                }
            )
        )
        producer.init_transactions(self._timeout_s)
        last = read_last_committed(self.kafka, self.commits_topic, marker_key(self.name, job), self._timeout_s)
        _log.info("kafka.producer_ready", sink=self.name, job=job, transactional_id=transactional_id, last_batch=last)
        return _JobProducer(producer, transactional_id, last)

    def _reset_producer(self, job: str, state: _JobProducer) -> None:
        """After a fatal producer error: a new producer in place (its init fences the old epoch)."""
        _log.warning("kafka.producer_reset", sink=self.name, job=job, transactional_id=state.transactional_id)
        fresh = self._new_producer(job)
        state.producer, state.last_committed, state.open_txn = fresh.producer, fresh.last_committed, None

    def _produce_batch(self, state: _JobProducer, txn: TxnId, rows: Sequence[IpCount]) -> None:
        """Begin a transaction, produce the rows and the marker, and flush (the transaction stays open)."""
        failures: list[KafkaError] = []

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                failures.append(error)

        producer = state.producer
        producer.begin_transaction()
        state.open_txn = txn
        for row in rows:
            self._produce(
                producer,
                self.topic,
                row["ip"].encode(),
                IP_COUNT_SERDE.encode(row),
                timestamp=row["window_start"],
                on_delivery=on_delivery,
            )
        self._produce(
            producer,
            self.commits_topic,
            marker_key(self.name, txn.job),
            marker_value(txn.batch),
            timestamp=None,
            on_delivery=on_delivery,
        )
        remaining = producer.flush(self._timeout_s)
        if remaining or failures:
            detail = f"{remaining} records unflushed" if remaining else f"delivery failed: {failures[0]}"
            self._abort_open(state)
            raise PrepareRejected(f"sink {self.name!r} cannot produce {txn} to {self.topic}: {detail}")

    @staticmethod
    def _produce(
        producer: Producer,
        topic: str,
        key: bytes,
        value: bytes,
        *,
        timestamp: int | None,
        on_delivery: DeliveryCallback,
    ) -> None:
        while True:
            try:
                if timestamp is None:
                    producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                else:
                    producer.produce(topic, value=value, key=key, timestamp=timestamp, on_delivery=on_delivery)
                producer.poll(0)
                return
            except BufferError:
                producer.poll(0.05)

    def _abort_open(self, state: _JobProducer) -> None:
        try:
            state.producer.abort_transaction(self._timeout_s)
        finally:
            state.open_txn = None

    def prepare_rows(self, txn: TxnId, rows: Sequence[IpCount], files: Sequence[StagedFile]) -> None:
        """Produce the batch and its marker in a Kafka transaction, left open; the journal remembers the files.

        Steps:
            1. ``init_transactions`` once per participant life (on the job's first use).
            2. Record the staged files in the journal (the durable prepared state).
            3. ``begin_transaction``, produce the staged rows to the sink topic.
            4. In the same transaction, produce the marker (key ``<sink>:<job>``, value = batch).
            5. Flush; the caller then votes yes.
        """
        # Step 1
        state = self._job(txn.job)
        with state.lock:
            if state.open_txn == txn or txn.batch <= state.last_committed:
                _log.info("prepare.again", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)
                return
            if state.open_txn is not None:
                raise PrepareRejected(
                    f"sink {self.name!r} cannot prepare {txn}: transaction {state.open_txn} is still open "
                    "(one open transaction per sink and job)"
                )
            # Step 2
            self._journal.record(txn, files)
            # Steps 3-5
            try:
                self._produce_batch(state, txn, rows)
            except KafkaException as exc:
                state.open_txn = None
                if exc.args[0].fatal():
                    self._reset_producer(txn.job, state)
                raise PrepareRejected(f"sink {self.name!r} cannot prepare {txn}: {exc}") from exc

    def commit(self, txn: TxnId, files: Sequence[StagedFile] = ()) -> None:
        """Commit the open transaction, or redo the batch from staging; idempotent.

        Steps:
            1. A batch at or below the job's last committed marker is already committed: no-op.
            2. If ``txn`` is the open transaction, ``commit_transaction``. Done unless Kafka has
               aborted it meanwhile (transaction timeout, fencing).
            3. Otherwise redo: read the staged files (``files``, else the journal's), produce the
               rows and the marker in a new transaction, and commit it.
            4. Remember the new last committed batch and drop the journal entry.
        """
        state = self._job(txn.job)
        with state.lock:
            # Step 1
            if txn.batch <= state.last_committed:
                _log.info("commit.already_committed", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)
                self._journal.remove(txn)
                return
            # Step 2
            committed = False
            if state.open_txn == txn:
                committed = self._commit_open(state, txn)
            # Step 3
            if not committed:
                staged = list(files) or self._journal.files(txn)
                if not staged:
                    raise TransactionNotPrepared(self.name, txn)
                if state.open_txn is not None:
                    self._abort_open(state)
                _log.warning("commit.redo_from_staging", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)
                self._produce_batch(state, txn, load_batch(staged))
                state.producer.commit_transaction(self._timeout_s)
                state.open_txn = None
            # Step 4
            state.last_committed = txn.batch
            self._journal.remove(txn)
        _log.info("commit.done", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)

    def _commit_open(self, state: _JobProducer, txn: TxnId) -> bool:
        """Commit the open transaction; False when Kafka aborted it and the batch must be redone."""
        try:
            state.producer.commit_transaction(self._timeout_s)
            state.open_txn = None
            return True
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.retriable() and not error.txn_requires_abort():
                raise  # the coordinator retries the commit; commit_transaction may be called again
            _log.warning(
                "commit.open_transaction_lost",
                sink=self.name,
                job=txn.job,
                batch=txn.batch,
                txn=txn,
                error=str(error),
                fatal=error.fatal(),
            )
            if error.fatal():
                self._reset_producer(txn.job, state)
            else:
                self._abort_open(state)
            state.open_txn = None
            return False

    def abort(self, txn: TxnId) -> None:
        """Abort ``txn``'s open transaction if it is open and forget it; unknown transactions are a no-op."""
        state = self._job(txn.job)
        with state.lock:
            if txn.batch <= state.last_committed:
                raise TransactionAlreadyCommitted(self.name, txn)
            if state.open_txn == txn:
                self._abort_open(state)
            self._journal.remove(txn)
        _log.info("abort.done", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)

    def list_prepared(self) -> list[TxnId]:
        return self._journal.list()

    def last_committed(self, job: str) -> int:
        """The job's last batch committed to this sink, or -1."""
        return self._job(job).last_committed

    def close(self) -> None:
        """Close the producers. An open transaction is left to the next ``init_transactions`` (or timeout)."""
        with self._producers_lock:
            for state in self._producers.values():
                state.producer.flush(1)
            self._producers.clear()
