"""InitProducerId and producer epochs on the wire: transaction timeouts a producer may ask for,
KIP-360 recovery and fencing, KIP-588 error codes by request version, and InitProducerId over an
open transaction. The same on the embedded broker and on Apache Kafka."""

from __future__ import annotations

from typing import Any

from kio.schema.end_txn.v1.request import EndTxnRequest as EndTxnV1
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v3.request import InitProducerIdRequest as InitProducerIdV3
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest as InitProducerIdV4

from onceflow.broker.protocol.shapes import build_entity
from onceflow.testing.broker.wire import WireClient

from .observe import Brokers, BrokerUnderTest, end_offsets, new_topic, records, unique
from .wire_steps import add_partition, end_txn, init_producer, produce_one

MAX_TIMEOUT_MS = 15 * 60 * 1000


def _init_answer(client: WireClient, request_cls: Any, values: dict[str, Any]) -> tuple[str, int]:
    """(error name, epoch) of an InitProducerId; the epoch is -1 on errors."""
    answer = client.request(build_entity(request_cls, values))
    code = ErrorCode(answer.error_code)
    return code.name, int(answer.producer_epoch) if code is ErrorCode.none else -1


def _timeouts(broker: BrokerUnderTest) -> dict[str, Any]:
    with WireClient(broker.bootstrap_servers) as client:
        init_producer(client, unique("warm-up"))  # the coordinator is loaded before the cases below
        return {
            f"timeout_{timeout}": _init_answer(
                client, InitProducerIdV4, {"transactional_id": unique("timeouts"), "transaction_timeout": timeout}
            )[0]
            for timeout in (1, MAX_TIMEOUT_MS, MAX_TIMEOUT_MS + 1, 0, -1)
        }


def test_transaction_timeouts_a_producer_may_ask_for(brokers: Brokers) -> None:
    observed = brokers.observe(_timeouts)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "timeout_1": "none",
        "timeout_900000": "none",
        "timeout_900001": "invalid_transaction_timeout",
        "timeout_0": "invalid_transaction_timeout",
        "timeout_-1": "invalid_transaction_timeout",
    }


def _epochs(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, transactional_id = new_topic(broker, "epochs"), unique("epochs")
    with WireClient(broker.bootstrap_servers) as client:
        first = init_producer(client, transactional_id)
        second = init_producer(client, transactional_id)
        pair = {"transactional_id": transactional_id, "transaction_timeout": 60_000}
        stale = {"transactional_id": transactional_id, **first}
        bogus = {**pair, "producer_id": first["producer_id"] + 1000, "producer_epoch": 0}
        return {
            "epoch_bump": second["producer_epoch"] - first["producer_epoch"],
            "same_producer_id": second["producer_id"] == first["producer_id"],
            "end_txn_v3_stale_epoch": end_txn(client, first, transactional_id, commit=True),
            "end_txn_v1_stale_epoch": ErrorCode(
                client.request(build_entity(EndTxnV1, {**stale, "committed": True})).error_code
            ).name,
            "end_txn_other_producer_id": end_txn(
                client, {**second, "producer_id": second["producer_id"] + 1000}, transactional_id, commit=True
            ),
            "add_partitions_stale_epoch": add_partition(client, first, transactional_id, topic),
            # KIP-360: the current pair recovers with an epoch bump; any other pair is fenced.
            "init_v4_with_current_pair": _init_answer(client, InitProducerIdV4, {**pair, **second})[0],
            "init_v4_with_unknown_pair": _init_answer(client, InitProducerIdV4, bogus),
            "init_v3_with_unknown_pair": _init_answer(client, InitProducerIdV3, bogus),
        }


def test_epochs_fencing_and_kip_588_error_codes(brokers: Brokers) -> None:
    observed = brokers.observe(_epochs)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "epoch_bump": 1,
        "same_producer_id": True,
        "end_txn_v3_stale_epoch": "producer_fenced",
        "end_txn_v1_stale_epoch": "invalid_producer_epoch",
        "end_txn_other_producer_id": "invalid_producer_id_mapping",
        "add_partitions_stale_epoch": "producer_fenced",
        "init_v4_with_current_pair": "none",
        "init_v4_with_unknown_pair": ("producer_fenced", -1),
        "init_v3_with_unknown_pair": ("invalid_producer_epoch", -1),
    }


def _init_over_an_open_transaction(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, transactional_id = new_topic(broker, "reinit"), unique("reinit-txn")
    with WireClient(broker.bootstrap_servers) as client:
        zombie = init_producer(client, transactional_id)
        added = add_partition(client, zombie, transactional_id, topic)
        written = produce_one(client, topic, zombie, 0, transactional_id=transactional_id)
        successor = init_producer(client, transactional_id)
        after = {
            "zombie_produce": produce_one(client, topic, zombie, 1, transactional_id=transactional_id),
            "zombie_commit": end_txn(client, zombie, transactional_id, commit=True),
            "successor_epoch_bump": successor["producer_epoch"] - zombie["producer_epoch"],
        }
    return {
        "added": added,
        "written": written,
        **after,
        "read_committed": records(broker, topic, "read_committed"),
        "read_uncommitted": records(broker, topic, "read_uncommitted"),
        # The abort marker InitProducerId wrote takes offset 1.
        "end_offsets": end_offsets(broker, topic),
    }


def test_init_producer_id_aborts_the_open_transaction_and_fences_its_producer(brokers: Brokers) -> None:
    observed = brokers.observe(_init_over_an_open_transaction)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "added": "none",
        "written": ("none", 0),
        "zombie_produce": ("invalid_producer_epoch", -1),
        "zombie_commit": "producer_fenced",
        # Apache Kafka bumps once to abort (fencing the zombie) and once for the new producer.
        "successor_epoch_bump": 2,
        "read_committed": [],
        "read_uncommitted": [(0, b"s0")],
        "end_offsets": {"high_watermark": 2, "lso": 2},
    }
