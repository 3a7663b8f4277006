"""Transaction requests on the wire, where no client library would send them: unknown partitions in
AddPartitionsToTxn, the batched broker-to-broker v4, KIP-588 error codes by request version, and a
produce to a partition outside the producer's transaction."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.add_partitions_to_txn.v1.request import AddPartitionsToTxnRequest as AddPartitionsV1
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest as AddPartitionsV3
from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnRequest as AddPartitionsV4
from kio.schema.end_txn.v1.request import EndTxnRequest as EndTxnV1
from kio.schema.end_txn.v3.request import EndTxnRequest as EndTxnV3
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v3.request import InitProducerIdRequest as InitProducerIdV3
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest as InitProducerIdV4
from kio.schema.produce.v9.request import ProduceRequest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.broker.protocol.shapes import build_entity
from onceflow.broker.storage import SimpleRecord, build_batch
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.broker.wire import WireClient

TRANSACTION_KEY = 1


def _errors_v3(response: Any) -> dict[tuple[str, int], ErrorCode]:
    return {
        (topic.name, int(p.partition_index)): p.partition_error_code
        for topic in response.results_by_topic_v3_and_below
        for p in topic.results_by_partition
    }


def _init(client: WireClient, transactional_id: str) -> dict[str, int]:
    answer = client.request(
        build_entity(InitProducerIdV4, {"transactional_id": transactional_id, "transaction_timeout": 60_000})
    )
    assert answer.error_code is ErrorCode.none
    return {"producer_id": int(answer.producer_id), "producer_epoch": int(answer.producer_epoch)}


def test_find_coordinator_answers_for_transactional_ids(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        answer = client.request(
            build_entity(FindCoordinatorRequest, {"key_type": TRANSACTION_KEY, "coordinator_keys": ["any-id"]})
        )
    (coordinator,) = answer.coordinators
    assert coordinator.error_code is ErrorCode.none
    assert (coordinator.node_id, coordinator.port) == (0, broker.port)


def test_add_partitions_checks_that_every_partition_exists_first(broker: EmbeddedBroker) -> None:
    create_topic(broker.bootstrap_servers, "known", partitions=2)
    with WireClient(broker.bootstrap_servers) as client:
        ids = _init(client, "adder")
        request = {
            "v3_and_below_transactional_id": "adder",
            "v3_and_below_producer_id": ids["producer_id"],
            "v3_and_below_producer_epoch": ids["producer_epoch"],
        }
        refused = client.request(
            build_entity(
                AddPartitionsV3,
                {**request, "v3_and_below_topics": [{"name": "known", "partitions": [0, 5]}]},
            )
        )
        assert _errors_v3(refused) == {
            ("known", 0): ErrorCode.operation_not_attempted,
            ("known", 5): ErrorCode.unknown_topic_or_partition,
        }
        added = client.request(
            build_entity(AddPartitionsV3, {**request, "v3_and_below_topics": [{"name": "known", "partitions": [1]}]})
        )
        assert _errors_v3(added) == {("known", 1): ErrorCode.none}

        verified = client.request(
            build_entity(
                AddPartitionsV4,
                {
                    "transactions": [
                        {
                            "transactional_id": "adder",
                            **ids,
                            "verify_only": True,
                            "topics": [{"name": "known", "partitions": [0, 1]}],
                        }
                    ]
                },
            )
        )
        (result,) = verified.results_by_transaction
        codes = {int(p.partition_index): p.partition_error_code for p in result.topic_results[0].results_by_partition}
        assert codes == {0: ErrorCode.invalid_txn_state, 1: ErrorCode.none}


def test_fenced_producers_get_the_error_code_their_request_version_knows(broker: EmbeddedBroker) -> None:
    """KIP-588: PRODUCER_FENCED from InitProducerId v4, AddPartitionsToTxn and EndTxn v2;
    INVALID_PRODUCER_EPOCH before."""
    create_topic(broker.bootstrap_servers, "kip588", partitions=1)
    with WireClient(broker.bootstrap_servers) as client:
        old = _init(client, "kip588")
        _init(client, "kip588")
        stale = {"transactional_id": "kip588", **old}

        assert client.request(build_entity(EndTxnV3, {**stale, "committed": True})).error_code is (
            ErrorCode.producer_fenced
        )
        assert client.request(build_entity(EndTxnV1, {**stale, "committed": True})).error_code is (
            ErrorCode.invalid_producer_epoch
        )
        added = client.request(
            build_entity(
                AddPartitionsV1,
                {
                    "v3_and_below_transactional_id": "kip588",
                    "v3_and_below_producer_id": old["producer_id"],
                    "v3_and_below_producer_epoch": old["producer_epoch"],
                    "v3_and_below_topics": [{"name": "kip588", "partitions": [0]}],
                },
            )
        )
        assert _errors_v3(added) == {("kip588", 0): ErrorCode.invalid_producer_epoch}

        # KIP-360: presenting a pair that is neither the current nor the previous one is fenced.
        bogus = {"transactional_id": "kip588", "transaction_timeout": 60_000, "producer_id": 999, "producer_epoch": 0}
        assert client.request(build_entity(InitProducerIdV4, bogus)).error_code is ErrorCode.producer_fenced
        assert client.request(build_entity(InitProducerIdV3, bogus)).error_code is ErrorCode.invalid_producer_epoch


def _produce_transactional(client: WireClient, ids: dict[str, int], partition: int, sequence: int) -> ErrorCode:
    records = build_batch(
        [SimpleRecord(key=None, value=b"stray")],
        producer_id=ids["producer_id"],
        producer_epoch=ids["producer_epoch"],
        base_sequence=sequence,
        transactional=True,
        timestamp_ms=int(time.time() * 1000),
    )
    answer = client.request(
        build_entity(
            ProduceRequest,
            {
                "transactional_id": "stray",
                "acks": -1,
                "timeout": 5000,
                "topic_data": [{"name": "stray", "partition_data": [{"index": partition, "records": records}]}],
            },
        )
    )
    return ErrorCode(answer.responses[0].partition_responses[0].error_code)


def test_transactional_produce_outside_the_transaction_is_refused(broker: EmbeddedBroker) -> None:
    """A batch for a partition never added with AddPartitionsToTxn would open a transaction that no
    marker closes (holding the LSO back forever): INVALID_TXN_STATE, and nothing is written."""
    create_topic(broker.bootstrap_servers, "stray", partitions=2)
    with WireClient(broker.bootstrap_servers) as client:
        ids = _init(client, "stray")
        added = client.request(
            build_entity(
                AddPartitionsV3,
                {
                    "v3_and_below_transactional_id": "stray",
                    "v3_and_below_producer_id": ids["producer_id"],
                    "v3_and_below_producer_epoch": ids["producer_epoch"],
                    "v3_and_below_topics": [{"name": "stray", "partitions": [0]}],
                },
            )
        )
        assert _errors_v3(added) == {("stray", 0): ErrorCode.none}
        assert _produce_transactional(client, ids, 0, 0) is ErrorCode.none
        assert _produce_transactional(client, ids, 1, 0) is ErrorCode.invalid_txn_state
