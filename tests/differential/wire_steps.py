"""Raw Kafka-protocol steps for requests no client library would send as the tests need them.

Each returns the error code's name (and the base offset for Produce), so scenarios can compare
the answers of two brokers as plain values. They use fixed request versions, the ones librdkafka
uses: InitProducerId v4, AddPartitionsToTxn v3, EndTxn v3, Produce v9.
"""

from __future__ import annotations

import time

from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v9.request import ProduceRequest

from onceflow.broker.protocol.shapes import build_entity
from onceflow.broker.storage import SimpleRecord, build_batch
from onceflow.testing.broker.wire import WireClient


def produce_one(
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
    # Apache Kafka: InitProducerId over an open transaction first aborts it, answering this meanwhile.
    ErrorCode.concurrent_transactions,
}


def init_producer(client: WireClient, transactional_id: str | None) -> dict[str, int]:
    """InitProducerId, retried like clients do (while a fresh Apache Kafka still creates its
    transaction state topic, or while it aborts the id's open transaction)."""
    request = build_entity(InitProducerIdRequest, {"transactional_id": transactional_id, "transaction_timeout": 60_000})
    deadline = time.monotonic() + 30
    while (answer := client.request(request)).error_code in RETRIABLE_INIT and time.monotonic() < deadline:
        if transactional_id is not None:
            client.request(
                build_entity(FindCoordinatorRequest, {"key_type": 1, "coordinator_keys": [transactional_id]})
            )
        time.sleep(0.2)
    assert answer.error_code is ErrorCode.none, answer.error_code
    return {"producer_id": int(answer.producer_id), "producer_epoch": int(answer.producer_epoch)}


def end_txn(client: WireClient, ids: dict[str, int], transactional_id: str, *, commit: bool) -> str:
    request = build_entity(EndTxnRequest, {"transactional_id": transactional_id, **ids, "committed": commit})
    return ErrorCode(client.request(request).error_code).name


def add_partition(client: WireClient, ids: dict[str, int], transactional_id: str, topic: str) -> str:
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


def end_txn_until_settled(client: WireClient, ids: dict[str, int], transactional_id: str, *, commit: bool) -> str:
    """EndTxn, retried while the answer is CONCURRENT_TRANSACTIONS (as every client does)."""
    deadline = time.monotonic() + 30
    while (answer := end_txn(client, ids, transactional_id, commit=commit)) == "concurrent_transactions":
        assert time.monotonic() < deadline, "the previous transaction end never completed"
        time.sleep(0.05)
    return answer
