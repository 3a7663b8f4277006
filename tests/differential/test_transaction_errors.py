"""Error codes of the transaction and idempotence protocol, as clients see them: fencing, transaction
timeouts, unknown producer ids, out-of-order sequences and invalid EndTxn transitions. The same on
the embedded broker and on Apache Kafka.

confluent-kafka refuses most invalid sequences locally, so the wire-level cases send crafted
requests (``wire_steps``).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaException

from onceflow.testing.broker.wire import WireClient

from .observe import (
    SWEEP_INTERVAL_MS,
    Brokers,
    BrokerUnderTest,
    ClientError,
    end_offsets,
    new_topic,
    produce,
    records,
    settle,
    transactional_producer,
    unique,
)
from .wire_steps import add_partition, end_txn, end_txn_until_settled, init_producer, produce_one

FENCED = ClientError("_FENCED", fatal=True, retriable=False, txn_requires_abort=False)


def _fenced_by_a_second_init(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, transactional_id = new_topic(broker, "fencing"), unique("fencing-txn")
    zombie = transactional_producer(broker, transactional_id)
    zombie.begin_transaction()
    produce(zombie, topic, b"zombie")
    successor = transactional_producer(broker, transactional_id)
    try:
        zombie.commit_transaction(30)
        zombie_error = None
    except KafkaException as exc:
        zombie_error = ClientError.of(exc)
    successor.begin_transaction()
    produce(successor, topic, b"successor")
    successor.commit_transaction(30)
    settle(broker, topic)
    return {"zombie_commit": zombie_error, "read_committed": [v for _, v in records(broker, topic, "read_committed")]}


def test_a_second_init_transactions_fences_the_first_producer(brokers: Brokers) -> None:
    observed = brokers.observe(_fenced_by_a_second_init)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "zombie_commit": FENCED,
        "read_committed": [b"successor"],
    }


def _timed_out_transaction(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "timeout")
    producer = transactional_producer(broker, unique("timeout-txn"), **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    produce(producer, topic, b"late")
    time.sleep(1.0 + SWEEP_INTERVAL_MS / 1000)
    settle(broker, topic)  # the sweep aborted the transaction and wrote its marker
    offsets_after_sweep = end_offsets(broker, topic)
    try:
        producer.commit_transaction(30)
        error = None
    except KafkaException as exc:
        error = ClientError.of(exc)
    return {
        "end_offsets_after_sweep": offsets_after_sweep,
        "commit": error,
        "read_committed": records(broker, topic, "read_committed"),
    }


def test_a_transaction_past_its_timeout_is_aborted_and_its_commit_fails(brokers: Brokers) -> None:
    observed = brokers.observe(_timed_out_transaction)
    assert observed["embedded"] == observed["apache-kafka"]
    # The sweep wrote an abort marker at offset 1, which releases the LSO.
    assert observed["apache-kafka"]["end_offsets_after_sweep"] == {"high_watermark": 2, "lso": 2}
    assert observed["apache-kafka"]["read_committed"] == []
    # The abort bumped the epoch: the producer's commit is fenced.
    assert observed["apache-kafka"]["commit"] == FENCED


def _idempotent_sequences(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "sequences")
    with WireClient(broker.bootstrap_servers) as client:
        ids = init_producer(client, None)
        unknown = {"producer_id": ids["producer_id"] + 1000, "producer_epoch": 0}
        bumped = {**ids, "producer_epoch": ids["producer_epoch"] + 1}
        return {
            "first": produce_one(client, topic, ids, 0),
            "next": produce_one(client, topic, ids, 1),
            "gap": produce_one(client, topic, ids, 3),
            "duplicate_of_next": produce_one(client, topic, ids, 1),
            "after_duplicate": produce_one(client, topic, ids, 2),
            "unknown_producer_nonzero_sequence": produce_one(client, topic, unknown, 5),
            "unknown_producer_sequence_zero": produce_one(client, topic, unknown, 0),
            "new_epoch_nonzero_sequence": produce_one(client, topic, bumped, 4),
            "new_epoch_sequence_zero": produce_one(client, topic, bumped, 0),
            "old_epoch": produce_one(client, topic, ids, 3),
        }


def test_idempotent_sequence_and_producer_id_errors(brokers: Brokers) -> None:
    observed = brokers.observe(_idempotent_sequences)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "first": ("none", 0),
        "next": ("none", 1),
        "gap": ("out_of_order_sequence_number", -1),
        # A retry of an acknowledged batch answers its original offset and writes nothing.
        "duplicate_of_next": ("none", 1),
        "after_duplicate": ("none", 2),
        # A producer id the partition has no state for starts at any sequence (KIP-360) ...
        "unknown_producer_nonzero_sequence": ("none", 3),
        # ... and is held to it from then on.
        "unknown_producer_sequence_zero": ("out_of_order_sequence_number", -1),
        "new_epoch_nonzero_sequence": ("out_of_order_sequence_number", -1),
        "new_epoch_sequence_zero": ("none", 4),
        "old_epoch": ("invalid_producer_epoch", -1),
    }


def _transitions(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, transactional_id = new_topic(broker, "transitions"), unique("transitions-txn")
    with WireClient(broker.bootstrap_servers) as client:
        ids = init_producer(client, transactional_id)
        steps: dict[str, Any] = {
            "produce_outside_the_transaction": produce_one(client, topic, ids, 0, transactional_id=transactional_id),
            "add_partition": add_partition(client, ids, transactional_id, topic),
            "produce": produce_one(client, topic, ids, 0, transactional_id=transactional_id),
            "commit": end_txn(client, ids, transactional_id, commit=True),
            "commit_again": end_txn_until_settled(client, ids, transactional_id, commit=True),
            "abort_after_commit": end_txn(client, ids, transactional_id, commit=False),
            "add_partition_again": add_partition(client, ids, transactional_id, topic),
            "produce_again": produce_one(client, topic, ids, 1, transactional_id=transactional_id),
            "abort": end_txn(client, ids, transactional_id, commit=False),
            "abort_again": end_txn_until_settled(client, ids, transactional_id, commit=False),
            "commit_after_abort": end_txn(client, ids, transactional_id, commit=True),
        }
    steps["read_committed"] = records(broker, topic, "read_committed")
    return steps


def test_end_txn_retries_and_conflicting_outcomes(brokers: Brokers) -> None:
    """A retried EndTxn with the same outcome succeeds, the other outcome is INVALID_TXN_STATE.
    (Apache Kafka answers CONCURRENT_TRANSACTIONS while it still writes the markers; the embedded
    broker writes them before answering: see docs/testing-on-apache-kafka.md.)"""
    observed = brokers.observe(_transitions)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "produce_outside_the_transaction": ("invalid_txn_state", -1),
        "add_partition": "none",
        "produce": ("none", 0),
        "commit": "none",
        "commit_again": "none",
        "abort_after_commit": "invalid_txn_state",
        "add_partition_again": "none",
        "produce_again": ("none", 2),
        "abort": "none",
        "abort_again": "none",
        "commit_after_abort": "invalid_txn_state",
        "read_committed": [(0, b"s0")],
    }


def test_end_txn_without_a_transaction_is_invalid(any_broker: BrokerUnderTest) -> None:
    transactional_id = unique("empty-txn")
    with WireClient(any_broker.bootstrap_servers) as client:
        ids = init_producer(client, transactional_id)
        answers = [end_txn(client, ids, transactional_id, commit=commit) for commit in (True, False)]
    assert answers == ["invalid_txn_state", "invalid_txn_state"]


def test_an_empty_transaction_commits_and_aborts_through_the_client(any_broker: BrokerUnderTest) -> None:
    """librdkafka ends a transaction to which nothing was added without an EndTxn, so the deviation
    above cannot reach confluent-kafka users."""
    producer = transactional_producer(any_broker, unique("empty-client-txn"))
    producer.begin_transaction()
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.abort_transaction(30)
