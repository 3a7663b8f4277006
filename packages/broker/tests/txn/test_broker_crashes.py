"""kill -9 of the broker in the middle of transactions and of EndTxn: committed transactions are
whole, aborted ones invisible, and no read_committed reader ever sees part of a transaction."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import KafkaException, Producer

from onceflow.broker.broker import TRANSACTIONS_DIR
from onceflow.broker.storage import ControlType, LogConfig, PartitionLog
from onceflow.broker.topics import LOGS_DIR
from onceflow.broker.transactions.store import TransactionStore
from onceflow.testing.broker.clients import create_topic, read_topic
from onceflow.testing.broker.fixtures import BrokerFactory

PARTITIONS = 3
RECORDS_PER_TXN = 6


def _transactional(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "linger.ms": 1,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
            "retry.backoff.ms": 20,
        }
    )
    producer.init_transactions(60)
    return producer


def _txn_values(number: int) -> list[bytes]:
    return [f"{number}:{j}".encode() for j in range(RECORDS_PER_TXN)]


def _produce_txn(producer: Producer, topic: str, number: int) -> None:
    for j, value in enumerate(_txn_values(number)):
        producer.produce(topic, value=value, partition=j % PARTITIONS)


def _txn_counts(bootstrap: str, topic: str) -> Counter[int]:
    records = read_topic(bootstrap, topic, idle_timeout=1.0, timeout=120)
    values = [r.value for r in records if r.value is not None]
    assert len(values) == len(set(values)), "a record was read twice"
    return Counter(int(value.split(b":")[0]) for value in values)


def test_crash_after_the_commit_point_finishes_the_commit_on_restart(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    """The broker dies after logging PrepareCommit and writing the COMMIT marker to one partition of
    three (the state is built offline, as the crash would leave it); the restart writes the rest."""
    data_dir = tmp_path / "broker"
    broker = broker_factory(data_dir)
    create_topic(broker.bootstrap_servers, "decided", partitions=PARTITIONS)
    producer = _transactional(broker.bootstrap_servers, "decided-writer")
    producer.begin_transaction()
    _produce_txn(producer, "decided", 1)
    assert producer.flush(30) == 0
    broker.kill()

    # The state a crash inside EndTxn leaves: Step 1 (PrepareCommit) done, Step 2 (markers) partly.
    store = TransactionStore.open(data_dir / TRANSACTIONS_DIR, fsync=True)
    ongoing = store.get("decided-writer")
    assert ongoing is not None and len(ongoing.partitions) == PARTITIONS
    store.put(ongoing.prepared(commit=True, now_ms=int(time.time() * 1000)))
    store.close()
    first = PartitionLog.open(data_dir / LOGS_DIR / "decided-0", "decided", 0, LogConfig(), now_ms=0)
    first.append_control(
        ControlType.COMMIT,
        producer_id=ongoing.producer_id,
        producer_epoch=ongoing.producer_epoch,
        coordinator_epoch=0,
        now_ms=int(time.time() * 1000),
    )
    first.close()

    broker.start()
    assert _txn_counts(broker.bootstrap_servers, "decided") == {1: RECORDS_PER_TXN}
    producer.commit_transaction(60)  # the client's retry of EndTxn: the same outcome, so no error
    assert "recovered=1" in broker.log_path.read_text()


class _TransactionLoop(threading.Thread):
    """Runs small transactions back to back and remembers what each one's outcome is known to be."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.topic = topic
        self.stop = threading.Event()
        self.committed: set[int] = set()
        self.aborted: set[int] = set()
        self.unknown: set[int] = set()
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # reported by the test
            self.failure = exc

    def _loop(self) -> None:
        producer = _transactional(self.bootstrap, "crash-writer")
        number = 0
        while not self.stop.is_set():
            number += 1
            try:
                producer.begin_transaction()
                _produce_txn(producer, self.topic, number)
                if number % 5 == 0:
                    producer.abort_transaction(60)
                    self.aborted.add(number)
                else:
                    producer.commit_transaction(60)
                    self.committed.add(number)
            except KafkaException as exc:
                self.unknown.add(number)
                producer = self._recover(producer, exc)

    def _recover(self, producer: Producer, exc: KafkaException) -> Producer:
        error = exc.args[0]
        if error.txn_requires_abort() and not error.fatal():
            try:
                producer.abort_transaction(60)
                return producer
            except KafkaException:
                pass
        # Fatal (or the abort failed too): a new instance fences the old one and ends its transaction.
        return _transactional(self.bootstrap, "crash-writer")


def _wait_for_a_commit(loop: _TransactionLoop, timeout: float = 120.0) -> None:
    """Wait until the loop commits one more transaction (it rides out a broker restart first)."""
    before = len(loop.committed)
    deadline = time.monotonic() + timeout
    while len(loop.committed) <= before:
        assert loop.is_alive(), loop.failure
        assert time.monotonic() < deadline, f"no transaction committed in {timeout:.0f}s"
        time.sleep(0.05)


def test_kill_9_during_transactions_keeps_every_transaction_whole(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "broker")
    create_topic(broker.bootstrap_servers, "crashy", partitions=PARTITIONS)
    loop = _TransactionLoop(broker.bootstrap_servers, "crashy")
    loop.start()
    rng = random.Random(7)
    kills = 8
    for _ in range(kills):
        # each kill comes after a new commit, at a random moment of the transactions that follow it:
        # how many commit between two kills does not depend on the machine's speed
        _wait_for_a_commit(loop)
        time.sleep(rng.uniform(0.0, 0.9))
        broker.kill()
        time.sleep(rng.uniform(0.0, 0.3))
        broker.start()
    _wait_for_a_commit(loop)
    loop.stop.set()
    loop.join(120)
    assert not loop.is_alive()
    assert loop.failure is None, loop.failure

    counts = _txn_counts(broker.bootstrap_servers, "crashy")
    partial = {number: count for number, count in counts.items() if count != RECORDS_PER_TXN}
    assert not partial, f"transactions seen in part: {partial}"
    assert loop.committed <= set(counts), "a transaction whose commit returned is missing"
    assert not loop.aborted & set(counts), "an aborted transaction is visible"
    assert set(counts) <= loop.committed | loop.unknown
    assert len(loop.committed) > kills
