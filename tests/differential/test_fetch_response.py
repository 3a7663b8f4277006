"""The Fetch response itself, below what a client library shows: the batches (control batches
included), the high watermark, the last stable offset, the log start offset and the aborted
transactions list that read_committed consumers filter with. The same on the embedded broker and
on Apache Kafka."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.fetch.v11.request import FetchRequest

from onceflow.broker.protocol.shapes import build_entity
from onceflow.broker.storage import iter_batches
from onceflow.testing.broker.wire import WireClient

from .observe import Brokers, BrokerUnderTest, new_topic, produce, settle, transactional_producer, unique

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TRANSACTIONAL, CONTROL = 0x10, 0x20


def _fetch(broker: BrokerUnderTest, topic: str, isolation_level: int) -> dict[str, Any]:
    request = build_entity(
        FetchRequest,
        {
            "max_wait": datetime.timedelta(0),
            "min_bytes": 0,
            "isolation_level": isolation_level,
            "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
            ],
        },
    )
    with WireClient(broker.bootstrap_servers) as client:
        answer = client.request(request)
    (partition,) = answer.responses[0].partitions
    producers: dict[int, int] = {}  # producer ids differ between brokers: number them as they appear

    def producer(pid: int) -> int:
        return producers.setdefault(pid, len(producers)) if pid >= 0 else -1

    batches = [
        {
            "offsets": (header.base_offset, header.last_offset),
            "records": header.record_count,
            "producer": producer(header.producer_id),
            "epoch": header.producer_epoch,
            "sequence": header.base_sequence,
            "transactional": bool(header.attributes & TRANSACTIONAL),
            "control": bool(header.attributes & CONTROL),
        }
        for _, header in iter_batches(bytes(partition.records or b""))
    ]
    return {
        "error": int(partition.error_code),
        "high_watermark": int(partition.high_watermark),
        "last_stable_offset": int(partition.last_stable_offset),
        "log_start_offset": int(partition.log_start_offset),
        "aborted": sorted(
            (producer(int(a.producer_id)), int(a.first_offset)) for a in partition.aborted_transactions or ()
        ),
        "batches": batches,
    }


def _fetch_both_levels(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "fetch")
    producer = transactional_producer(broker, unique("fetch-txn"))
    for values, commit in (((b"c1", b"c2"), True), ((b"a1",), False), ((b"c3",), True), ((b"open",), None)):
        settle(broker, topic)
        producer.begin_transaction()
        produce(producer, topic, *values)
        if commit is True:
            producer.commit_transaction(30)
        elif commit is False:
            producer.abort_transaction(30)
    observed = {
        "read_uncommitted": _fetch(broker, topic, READ_UNCOMMITTED),
        "read_committed": _fetch(broker, topic, READ_COMMITTED),
    }
    producer.abort_transaction(30)
    return observed


def test_fetch_batches_offsets_and_aborted_transactions(brokers: Brokers) -> None:
    observed = brokers.observe(_fetch_both_levels)
    assert observed["embedded"] == observed["apache-kafka"]
    committed = observed["apache-kafka"]["read_committed"]
    # c1 c2 | COMMIT@2 | a1@3 | ABORT@4 | c3@5 | COMMIT@6 | open@7 (still open: LSO 7)
    assert (committed["high_watermark"], committed["last_stable_offset"]) == (8, 7)
    assert committed["aborted"] == [(0, 3)]
    assert [b["offsets"] for b in committed["batches"]] == [(0, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)]
