"""Transaction admin: DescribeProducers, ListTransactions and DescribeTransactions on the wire, and
the ``onceflow broker txns`` command that lists an open transaction and aborts it."""

from __future__ import annotations

import subprocess
import sys
import time

from confluent_kafka import KafkaError, KafkaException, Producer
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_producers.v0.request import DescribeProducersRequest
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_transactions.v1.request import ListTransactionsRequest

from onceflow.broker.admin.describe_transactions_schema import DescribeTransactionsResponse
from onceflow.broker.embedded import EmbeddedBroker
from onceflow.broker.protocol import versions
from onceflow.broker.protocol.shapes import build_entity
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.wire import WireClient


def _open_transaction(bootstrap: str, transactional_id: str, topic: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 1})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"stuck", partition=1)
    assert producer.flush(10) == 0
    return producer


def test_admin_apis_describe_producers_and_transactions(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "adm", partitions=2)
    producer = _open_transaction(bootstrap, "adm-writer", "adm")
    produce_acked(bootstrap, "adm", [b"plain"], partition=1)

    with WireClient(bootstrap) as client:
        advertised = {int(k.api_key) for k in client.request(build_entity(ApiVersionsRequest, {})).api_keys}
        assert {versions.DESCRIBE_PRODUCERS, versions.LIST_TRANSACTIONS, versions.DESCRIBE_TRANSACTIONS} <= advertised

        listed = client.request(build_entity(ListTransactionsRequest, {"state_filters": ["Ongoing", "Nonsense"]}))
        assert listed.error_code is ErrorCode.none
        assert list(listed.unknown_state_filters) == ["Nonsense"]
        (listing,) = listed.transaction_states
        assert (listing.transactional_id, listing.transaction_state) == ("adm-writer", "Ongoing")
        older = client.request(build_entity(ListTransactionsRequest, {"duration_filter": 3_600_000}))
        assert list(older.transaction_states) == []

        described = client.request(
            build_entity(DescribeTransactionsRequest, {"transactional_ids": ["adm-writer", "nobody"]}),
            DescribeTransactionsResponse,  # reads the start time as int64: Kafka sends -1 for "none"
        )
        found, missing = described.transaction_states
        assert found.error_code is ErrorCode.none
        assert found.transaction_state == "Ongoing"
        assert found.producer_id == listing.producer_id
        assert [(t.topic, list(t.partitions)) for t in found.topics] == [("adm", [1])]
        assert abs(found.transaction_start_time / 1000 - time.time()) < 60
        assert missing.error_code is ErrorCode.transactional_id_not_found

        producers = client.request(
            build_entity(DescribeProducersRequest, {"topics": [{"name": "adm", "partition_indexes": [1, 7]}]})
        )
        partition, unknown = producers.topics[0].partitions
        assert unknown.error_code is ErrorCode.unknown_topic_or_partition
        by_id = {int(p.producer_id): p for p in partition.active_producers}
        assert by_id[int(listing.producer_id)].current_txn_start_offset == 0
        plain = [p for pid, p in by_id.items() if pid != listing.producer_id]
        assert len(plain) == 1 and plain[0].current_txn_start_offset == -1 and plain[0].last_sequence == 0
    producer.abort_transaction(10)


def _onceflow(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``onceflow broker txns ARGS``, through ``python -m onceflow.broker`` (the same parser and
    command, without loading every other package's ``onceflow`` subcommand)."""
    command = [sys.executable, "-m", "onceflow.broker", "txns", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)


def test_txns_command_lists_an_open_transaction_and_aborts_it(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "cli", partitions=2)
    stuck = _open_transaction(bootstrap, "cli-stuck", "cli")
    produce_acked(bootstrap, "cli", [b"behind"], partition=1)
    time.sleep(1.2)

    listed = _onceflow("--bootstrap-server", bootstrap)
    assert listed.returncode == 0, listed.stderr
    header, row, summary = listed.stdout.strip().splitlines()
    assert header.split()[:5] == ["TRANSACTIONAL_ID", "STATE", "PRODUCER_ID", "EPOCH", "AGE"]
    assert row.split()[0:2] == ["cli-stuck", "Ongoing"]
    age = row.split()[4]
    assert age.endswith("s") and float(age[:-1]) >= 1.0
    assert row.split()[-1] == "cli-1"
    assert summary == "1 open transaction(s)"

    declined = _onceflow("--bootstrap-server", bootstrap, "--abort", "cli-stuck", stdin="n\n")
    assert declined.returncode == 1 and "not aborted" in declined.stdout
    assert read_topic(bootstrap, "cli", idle_timeout=0.3) == []

    aborted = _onceflow("--bootstrap-server", bootstrap, "--abort", "cli-stuck", "--yes")
    assert aborted.returncode == 0, aborted.stderr
    assert "now Empty" in aborted.stdout
    assert [r.value for r in read_topic(bootstrap, "cli", idle_timeout=0.3)] == [b"behind"]
    assert _onceflow("--bootstrap-server", bootstrap).stdout.strip().splitlines()[-1] == "0 open transaction(s)"

    try:
        stuck.commit_transaction(10)
        raise AssertionError("the aborted producer committed")
    except KafkaException as exc:
        assert exc.args[0].code() in {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}

    missing = _onceflow("--bootstrap-server", bootstrap, "--abort", "nobody", "--yes")
    assert missing.returncode == 2 and "TRANSACTIONAL_ID_NOT_FOUND" in missing.stderr.upper()
