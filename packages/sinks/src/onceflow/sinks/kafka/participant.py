"""The Kafka topic sink participant: a transactional producer per (sink, job)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from onceflow.contract import (
    WHOLE_SINK,
    CommittedBatches,
    Shard,
    SinkBinding,
    TransactionId,
    UnsupportedColumnType,
    ValueFormat,
    check_supported,
)
from onceflow.contract.staging import StagedFile
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.core.kafka import Replication, RetryPolicy, retry_transient, transactional_producer_config
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC
from onceflow.sinks.base import BoundRows, SinkParticipant
from onceflow.sinks.exceptions import (
    BindingRejected,
    PrepareRejected,
    TransactionAlreadyCommitted,
    TransactionNotPrepared,
)
from onceflow.sinks.kafka.journal import PreparedJournal
from onceflow.sinks.kafka.markers import (
    ensure_topics,
    marker_key,
    marker_value,
    read_last_committed,
    read_last_committed_by_job,
)
from onceflow.sinks.kafka.records import BindingRecords, produce_record

_log = get_logger(__name__)
#: PrepareBindings opens a job's producer in the background only while fewer producers are open.
WARM_UP_LIMIT = 64


@dataclass
class _JobProducer:
    """The transactional producer of one job, its open transaction and the job's last committed batch."""

    producer: Producer
    transactional_id: str
    last_committed: int
    open_txn: TransactionId | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class KafkaParticipant(SinkParticipant):
    """Writes each binding's rows to its Kafka topic in Kafka transactions, with commit markers.

    Each job gets a transactional producer (``transactional.id = onceflow-sink-<sink>-<job>``; a shard
    of a sharded sink uses ``<sink>#<index>`` for ``<sink>`` here, in its markers and its journal),
    whose ``init_transactions`` runs once per participant life and aborts whatever a predecessor
    left open. One transaction is open at a time per sink and job: a job's batches are sequential,
    so a prepare for another batch while one is open votes no.

    A transaction holds the rows of every binding of the batch (:class:`BindingRecords`: key = the
    binding's key columns, value = Avro single-object encoding with the schema derived from the
    output, published in the schemas topic, or JSON; headers = the binding's header columns) and a
    marker record (key ``<sink>:<job>``,
    value = batch) in the compacted commits topic. Upsert and append produce the same records: a
    replayed batch is recognised by the marker, never by a key, so no record is produced twice.
    The open Kafka transaction is only a fast path: the durable prepared
    state is the staged files, listed per transaction in a :class:`PreparedJournal`. After a
    restart, commit redoes the batch from its staged files in a new transaction unless the commits
    topic already shows it (or a later batch) committed, so redo is idempotent.

    ``topic`` is only created at start, so readers can subscribe before the first batch: what is
    written where is always the job's bindings.
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
        shard: Shard = WHOLE_SINK,
    ) -> None:
        super().__init__(name, shard=shard)
        self.kafka = kafka
        self.topic = topic
        self.commits_topic = commits_topic
        self._transaction_timeout_ms = transaction_timeout_ms
        self._timeout_s = timeout_s
        self._journal = PreparedJournal(state_dir, self.record_name)
        #: Writes (and fsyncs) journal entries while the batch is produced: both finish before the vote.
        self._journal_writer = ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"journal-{self.record_name}")
        self._producers: dict[str, _JobProducer] = {}
        self._producers_lock = threading.Lock()
        #: Jobs whose producer a background thread is opening (:meth:`_warm_in_background`).
        self._warming: set[str] = set()
        self._warming_lock = threading.Lock()
        self._closed = False
        self._records = BindingRecords()
        self._schemas = SchemasTopic(
            kafka.bootstrap_servers, config=_client_extras(kafka), replication=Replication.of(kafka)
        )
        ensure_topics(kafka, topic, commits_topic, timeout=timeout_s)

    def own_topics(self) -> frozenset[str]:
        return frozenset({self.commits_topic})

    def prepare_bindings(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        """Create each binding's topic, check its columns, and publish its Avro writer schema.

        Steps:
            1. Every column must have a type the sink encodes (else :class:`BindingRejected` names it).
            2. Create the topic when it is missing.
            3. Avro bindings: publish the writer schema in the schemas topic, so any reader resolves it.
            4. Open the job's producer in the background (:meth:`_warm_in_background`): its ``init_transactions``,
               the last committed marker and the new topics' metadata take hundreds of milliseconds,
               which then overlap the driver's first batch instead of delaying its first prepare
               (which waits for them if they are not done). Not beyond :data:`WARM_UP_LIMIT` open
               producers: a client that prepares bindings for many jobs does not open a producer
               for each (a job's first prepare still does).
        """
        for binding in bindings:
            where = f"topic {binding.topic!r} (output {binding.output!r})"
            if not binding.topic:
                raise BindingRejected(self.name, where, "a Kafka binding needs a topic")
            # Step 1
            if binding.schema is not None:
                try:
                    check_supported(binding.output, binding.schema)
                except UnsupportedColumnType as exc:
                    raise BindingRejected(self.name, where, str(exc)) from None
            # Step 2
            ensure_topics(self.kafka, binding.topic, self.commits_topic, timeout=self._timeout_s)
            # Step 3
            if binding.value_format is ValueFormat.AVRO and binding.schema is not None:
                self._schemas.publish(self._records.writer_schema(job, binding, binding.schema), self._timeout_s)
        _log.info("kafka.bindings_ready", sink=self.name, job=job, topics=",".join(b.topic for b in bindings))
        # Step 4
        self._warm_in_background(job, [b.topic for b in bindings])

    def _warm_in_background(self, job: str, topics: Sequence[str]) -> None:
        """Start a daemon thread that opens ``job``'s producer, unless it is open, being opened, or
        :data:`WARM_UP_LIMIT` producers are open or being opened. A daemon thread: a participant that
        stops while Kafka is unreachable neither waits for it nor is kept alive by it."""
        with self._warming_lock:
            busy = len(self._producers) + len(self._warming)
            if self._closed or job in self._producers or job in self._warming or busy >= WARM_UP_LIMIT:
                return
            self._warming.add(job)
        name = f"warm-up-{self.record_name}-{job}"
        threading.Thread(target=self._warm, args=(job, topics), name=name, daemon=True).start()

    def _warm(self, job: str, topics: Sequence[str]) -> None:
        """Open ``job``'s producer and fetch its topics' metadata; a failure is only logged (the first
        prepare opens the producer itself, and fails there with the error to report)."""
        try:
            if self._closed:
                return
            state = self._job(job)
            for topic in {self.commits_topic, *topics}:
                state.producer.list_topics(topic, timeout=self._timeout_s)
        except Exception as exc:
            _log.warning("kafka.warm_up_failed", sink=self.name, job=job, error=str(exc))
        finally:
            with self._warming_lock:
                self._warming.discard(job)

    def transactional_id(self, job: str) -> str:
        return f"onceflow-sink-{self.record_name}-{job}"

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
        overrides = {"acks": "all", "transaction.timeout.ms": self._transaction_timeout_ms}
        producer = Producer(transactional_producer_config(self.kafka.client_config(), transactional_id, **overrides))
        retry_transient(
            lambda: producer.init_transactions(self._timeout_s),
            what=f"init_transactions of {transactional_id}",
            policy=RetryPolicy(timeout_s=self._timeout_s),
        )
        last = read_last_committed(self.kafka, self.commits_topic, marker_key(self.record_name, job), self._timeout_s)
        _log.info("kafka.producer_ready", sink=self.name, job=job, transactional_id=transactional_id, last_batch=last)
        return _JobProducer(producer, transactional_id, last)

    def _reset_producer(self, job: str, state: _JobProducer) -> None:
        """After a fatal producer error: a new producer in place (its init fences the old epoch)."""
        _log.warning("kafka.producer_reset", sink=self.name, job=job, transactional_id=state.transactional_id)
        fresh = self._new_producer(job)
        state.producer, state.last_committed, state.open_txn = fresh.producer, fresh.last_committed, None

    def _produce_batch(self, state: _JobProducer, txn: TransactionId, outputs: Sequence[BoundRows]) -> None:
        """Begin a transaction, produce every binding's rows and the marker, and flush (the transaction stays open)."""
        failures: list[KafkaError] = []

        def on_delivery(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                failures.append(error)

        producer = state.producer
        producer.begin_transaction()
        state.open_txn = txn
        for bound in outputs:
            self._records.produce(producer, txn.job, bound, on_delivery)
        produce_record(
            producer,
            self.commits_topic,
            marker_key(self.record_name, txn.job),
            marker_value(txn.batch),
            on_delivery=on_delivery,
        )
        remaining = producer.flush(self._timeout_s)
        if remaining or failures:
            detail = f"{remaining} records unflushed" if remaining else f"delivery failed: {failures[0]}"
            self._abort_open(state)
            topics = ", ".join(sorted({bound.binding.topic for bound in outputs} | {self.commits_topic}))
            raise PrepareRejected(f"sink {self.name!r} cannot produce {txn} to {topics}: {detail}")

    def _abort_open(self, state: _JobProducer) -> None:
        try:
            state.producer.abort_transaction(self._timeout_s)
        finally:
            state.open_txn = None

    def prepare_rows(self, txn: TransactionId, outputs: Sequence[BoundRows], files: Sequence[StagedFile]) -> None:
        """Produce the batch and its marker in a Kafka transaction, left open; the journal remembers the files.

        Steps:
            1. ``init_transactions`` once per participant life (on the job's first use).
            2. Record the staged files and bindings in the journal (the durable prepared state), on
               the journal thread: the fsync overlaps Steps 3 to 5.
            3. ``begin_transaction``, produce every binding's rows to its topic.
            4. In the same transaction, produce the marker (key ``<sink>:<job>``, or ``<sink>#<index>:<job>``
               for a shard; value = batch).
            5. Flush, and wait for the journal entry (if it failed: abort the open transaction and
               raise); the caller then votes yes.
        """
        # Step 1
        state = self._job(txn.job)
        with state.lock:
            if state.open_txn == txn or txn.batch <= state.last_committed:
                _log.info("prepare.again", sink=self.name, **txn.log_fields())
                return
            if state.open_txn is not None:
                raise PrepareRejected(
                    f"sink {self.name!r} cannot prepare {txn}: transaction {state.open_txn} is still open "
                    "(one open transaction per sink and job)"
                )
            # Step 2 (on the journal thread, while Steps 3-5 run)
            recorded = self._journal_writer.submit(self._journal.record, txn, files, [b.binding for b in outputs])
            # Steps 3-5
            try:
                self._produce_batch(state, txn, outputs)
            except KafkaException as exc:
                state.open_txn = None
                if exc.args[0].fatal():
                    self._reset_producer(txn.job, state)
                raise PrepareRejected(f"sink {self.name!r} cannot prepare {txn}: {exc}") from exc
            finally:
                self._await_journal(state, recorded)

    def _await_journal(self, state: _JobProducer, recorded: Future[None]) -> None:
        """Wait until the journal entry is durable; if it cannot be written, abort the open transaction
        (no yes vote without the durable prepared state) and raise the journal's error."""
        try:
            recorded.result()
        except BaseException:
            if state.open_txn is not None:
                self._abort_open(state)
            raise

    def commit(
        self, txn: TransactionId, files: Sequence[StagedFile] = (), bindings: Sequence[SinkBinding] = ()
    ) -> None:
        """Commit the open transaction, or redo the batch from staging; idempotent.

        Steps:
            1. A batch at or below the job's last committed marker is already committed: no-op.
            2. If ``txn`` is the open transaction, ``commit_transaction``. Done unless Kafka has
               aborted it meanwhile (transaction timeout, fencing).
            3. Otherwise redo: read the staged files and bindings (given, else the journal's),
               produce the rows and the marker in a new transaction, and commit it.
            4. Remember the new last committed batch and drop the journal entry (a crash before that
               leaves an entry whose batch the commits topic shows committed: Step 1 on restart).
        """
        state = self._job(txn.job)
        with state.lock:
            # Step 1
            if txn.batch <= state.last_committed:
                _log.info("commit.already_committed", sink=self.name, **txn.log_fields())
                self._journal.remove(txn)
                return
            # Step 2
            committed = False
            if state.open_txn == txn:
                committed = self._commit_open(state, txn)
            # Step 3
            if not committed:
                entry = self._journal.entry(txn)
                staged = list(files) or (entry[0] if entry else [])
                if not staged:
                    raise TransactionNotPrepared(self.name, txn)
                redo_bindings = list(bindings) or (entry[1] if entry else [])
                if state.open_txn is not None:
                    self._abort_open(state)
                _log.warning("commit.redo_from_staging", sink=self.name, **txn.log_fields())
                self._produce_batch(state, txn, self.load(txn.job, staged, redo_bindings))
                state.producer.commit_transaction(self._timeout_s)
                state.open_txn = None
            # Step 4
            self.faults.at("commit-midway", sink=self.record_name, txn=txn)
            state.last_committed = txn.batch
            self._journal.remove(txn)
        _log.info("commit.done", sink=self.name, **txn.log_fields())

    def _commit_open(self, state: _JobProducer, txn: TransactionId) -> bool:
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
                **txn.log_fields(),
                error=str(error),
                fatal=error.fatal(),
            )
            if error.fatal():
                self._reset_producer(txn.job, state)
            else:
                self._abort_open(state)
            state.open_txn = None
            return False

    def abort(self, txn: TransactionId) -> None:
        """Abort ``txn``'s open transaction if it is open and forget it; unknown transactions are a no-op."""
        state = self._job(txn.job)
        with state.lock:
            if txn.batch <= state.last_committed:
                raise TransactionAlreadyCommitted(self.name, txn)
            if state.open_txn == txn:
                self._abort_open(state)
            self._journal.remove(txn)
        _log.info("abort.done", sink=self.name, **txn.log_fields())

    def list_prepared(self) -> list[TransactionId]:
        return self._journal.list()

    def last_committed(self, job: str) -> int:
        """The job's last batch committed to this sink, or -1."""
        return self._job(job).last_committed

    def committed_batches(self, job: str | None, limit: int) -> list[CommittedBatches]:
        """From the compacted commit markers: only the last batch per job (``cumulative``)."""
        last = read_last_committed_by_job(self.kafka, self.commits_topic, self.record_name, self._timeout_s)
        return [
            CommittedBatches(name, batch, (batch,), cumulative=True)
            for name, batch in sorted(last.items())
            if job is None or name == job
        ]

    def close(self) -> None:
        """Close the producers. An open transaction is left to the next ``init_transactions`` (or timeout)."""
        self._closed = True
        with self._producers_lock:
            for state in self._producers.values():
                state.producer.flush(1)
            self._producers.clear()
        self._journal_writer.shutdown(wait=True)


def _client_extras(kafka: KafkaSettings) -> dict[str, Any]:
    """The cluster's client settings (security, ...) without the bootstrap servers."""
    config = dict(kafka.client_config())
    config.pop("bootstrap.servers", None)
    return config
