"""Error codes of the transaction and idempotence protocol, as clients see them: fencing, transaction
timeouts, unknown producer ids, out-of-order sequences and invalid EndTxn transitions. The same on
the embedded broker and on Apache Kafka.

confluent-kafka refuses most invalid sequences locally, so the wire-level cases go through
:class:`~onceflow.broker.testing.wire.WireClient` with crafted requests.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaException
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v9.request import ProduceRequest

from onceflow.broker.protocol.shapes import build_entity
from onceflow.broker.storage import SimpleRecord, build_batch
from onceflow.broker.testing.wire import WireClient

from .observe import (
    SWEEP_INTERVAL_MS,
    Brokers,
    BrokerUnderTest,
    ClientError,
    end_offsets,
    new_topic,
    produce,
    records,
    transactional_producer,
    unique,
)

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
    time.sleep(1.0 + 3 * SWEEP_INTERVAL_MS / 1000)
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


def _produce(
    client: WireClient, topic: str, ids: dict[str, int], sequence: int, *, transactional_id: str | None = None
) -> tuple[str, int]:
    """One record with ``sequence``: (error name, base offset or -1)."""
    batch = build_batch(
        [SimpleRecord(key=None, value=b"s%d" % sequence)],
        producer_id=ids["producer_id"],
        producer_epoch=ids["producer_epoch"],
        base_sequence=sequence,
        transactional=transactional_id is not None,
        timestamp_ms=int(time.time() * 1000),
    )
    answer = client.request(
        build_entity(
            ProduceRequest,
            {
                "transactional_id": transactional_id,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
            },
        )
    )
    partition = answer.responses[0].partition_responses[0]
    code = ErrorCode(partition.error_code)
    return code.name, int(partition.base_offset) if code is ErrorCode.none else -1


RETRIABLE_INIT = {
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress,
}


def _init(client: WireClient, transactional_id: str | None) -> dict[str, int]:
    """InitProducerId, retried while a fresh Apache Kafka still creates its transaction state topic."""
    request = build_entity(InitProducerIdRequest, {"transactional_id": transactional_id, "transaction_timeout": 60_000})
    deadline = time.monotonic() + 30
    while (answer := client.request(request)).error_code in RETRIABLE_INIT and time.monotonic() < deadline:
        if transactional_id is not None:
            client.request(
                build_entity(FindCoordinatorRequest, {"key_type": 1, "coordinator_keys": [transactional_id]})
            )
        time.sleep(0.2)
    assert answer.error_code is ErrorCode.none
    return {"producer_id": int(answer.producer_id), "producer_epoch": int(answer.producer_epoch)}


def _idempotent_sequences(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "sequences")
    with WireClient(broker.bootstrap_servers) as client:
        ids = _init(client, None)
        unknown = {"producer_id": ids["producer_id"] + 1000, "producer_epoch": 0}
        bumped = {**ids, "producer_epoch": ids["producer_epoch"] + 1}
        return {
            "first": _produce(client, topic, ids, 0),
            "next": _produce(client, topic, ids, 1),
            "gap": _produce(client, topic, ids, 3),
            "duplicate_of_next": _produce(client, topic, ids, 1),
            "after_duplicate": _produce(client, topic, ids, 2),
            "unknown_producer_nonzero_sequence": _produce(client, topic, unknown, 5),
            "unknown_producer_sequence_zero": _produce(client, topic, unknown, 0),
            "new_epoch_nonzero_sequence": _produce(client, topic, bumped, 4),
            "new_epoch_sequence_zero": _produce(client, topic, bumped, 0),
            "old_epoch": _produce(client, topic, ids, 3),
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


def _end_txn(client: WireClient, ids: dict[str, int], transactional_id: str, *, commit: bool) -> str:
    request = build_entity(EndTxnRequest, {"transactional_id": transactional_id, **ids, "committed": commit})
    return ErrorCode(client.request(request).error_code).name


def _add_partition(client: WireClient, ids: dict[str, int], transactional_id: str, topic: str) -> str:
    answer = client.request(
        build_entity(
            AddPartitionsToTxnRequest,
            {
                "v3_and_below_transactional_id": transactional_id,
                "v3_and_below_producer_id": ids["producer_id"],
                "v3_and_below_producer_epoch": ids["producer_epoch"],
                "v3_and_below_topics": [{"name": topic, "partitions": [0]}],
            },
        )
    )
    return ErrorCode(answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code).name


def _end_txn_until_settled(client: WireClient, ids: dict[str, int], transactional_id: str, *, commit: bool) -> str:
    """EndTxn, retried while the answer is CONCURRENT_TRANSACTIONS (as every client does)."""
    deadline = time.monotonic() + 30
    while (answer := _end_txn(client, ids, transactional_id, commit=commit)) == "concurrent_transactions":
        assert time.monotonic() < deadline, "the previous transaction end never completed"
        time.sleep(0.05)
    return answer


def _transitions(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, transactional_id = new_topic(broker, "transitions"), unique("transitions-txn")
    with WireClient(broker.bootstrap_servers) as client:
        ids = _init(client, transactional_id)
        steps: dict[str, Any] = {
            "produce_outside_the_transaction": _produce(client, topic, ids, 0, transactional_id=transactional_id),
            "add_partition": _add_partition(client, ids, transactional_id, topic),
            "produce": _produce(client, topic, ids, 0, transactional_id=transactional_id),
            "commit": _end_txn(client, ids, transactional_id, commit=True),
            "commit_again": _end_txn_until_settled(client, ids, transactional_id, commit=True),
            "abort_after_commit": _end_txn(client, ids, transactional_id, commit=False),
            "add_partition_again": _add_partition(client, ids, transactional_id, topic),
            "produce_again": _produce(client, topic, ids, 1, transactional_id=transactional_id),
            "abort": _end_txn(client, ids, transactional_id, commit=False),
            "abort_again": _end_txn_until_settled(client, ids, transactional_id, commit=False),
            "commit_after_abort": _end_txn(client, ids, transactional_id, commit=True),
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


EMPTY_END_TXN = (
    "deviation: the embedded broker answers NONE to EndTxn on an Empty transaction, Apache Kafka "
    "INVALID_TXN_STATE (docs/testing-on-apache-kafka.md, 'EndTxn without a transaction')"
)


@pytest.mark.parametrize(
    "any_broker",
    [pytest.param("embedded", marks=pytest.mark.xfail(strict=True, reason=EMPTY_END_TXN)), "apache-kafka"],
    indirect=True,
)
def test_end_txn_without_a_transaction_is_invalid(any_broker: BrokerUnderTest) -> None:
    transactional_id = unique("empty-txn")
    with WireClient(any_broker.bootstrap_servers) as client:
        ids = _init(client, transactional_id)
        answers = [_end_txn(client, ids, transactional_id, commit=commit) for commit in (True, False)]
    assert answers == ["invalid_txn_state", "invalid_txn_state"]
