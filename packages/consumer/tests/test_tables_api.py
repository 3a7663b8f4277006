"""The Results API over stored tables: ListTables, ListRows (pages), WatchRows, bad arguments, and the
``onceflow results tables|rows|watch-rows`` commands."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.cli.app import main as onceflow
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.contract.clients import RequestRefused, ResultsClient
from onceflow.contract.results import RowsUpdate
from onceflow.core.avro.arrow import json_value
from onceflow.proto.v1 import results_pb2, results_pb2_grpc

from .conftest import Transaction, TransactionalWriter, ip_count, wait_until

COLUMNS = {"seq": "long not null", "ip": "string", "status": "int"}


def event(seq: int) -> dict[str, Any]:
    return {"seq": seq, "ip": f"10.1.0.{seq % 4}", "status": 200 + seq}


@pytest.fixture
def service(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path
) -> Iterator[tuple[ConsumerService, TransactionalWriter, TransactionalWriter]]:
    ip_counts, events = make_topic(), make_topic(partitions=2)
    settings = ConsumerSettings.model_validate(
        {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "consumer": {"topic": ip_counts, "group_id": "tables-api", "max_batch_ms": 20},
            "store": {"path": str(tmp_path / "results.db")},
            "server": {"port": 0},
            "tables": [{"topic": events, "table": "events", "value_format": "json", "columns": COLUMNS}],
        }
    )
    counts = TransactionalWriter(broker.bootstrap_servers, ip_counts)
    counts.write(Transaction([ip_count(0, "10.0.0.1", 3), ip_count(0, "10.0.0.2", 4)]))
    writer = TransactionalWriter(broker.bootstrap_servers, events)
    writer.write_values([json_value(event(i)) for i in range(7)])
    running = ConsumerService(settings).start()
    store, tables = running._api_store, running.tables
    assert store is not None

    def stored() -> int:
        return sum(o.applied_records for t in tables.topics for o in store.stored_offsets("tables-api", t).values())

    wait_until(lambda: stored() == 9, 30, "the consumer to store both topics")
    yield running, writer, counts
    running.stop()


@pytest.fixture
def stub(service: tuple[ConsumerService, Any, Any]) -> Iterator[results_pb2_grpc.ResultsStub]:
    with ResultsClient(f"127.0.0.1:{service[0].port}") as client:
        yield client.stub


def rows_of(response: Any) -> list[dict[str, Any]]:
    return [json.loads(row.json) for row in response.rows]


def test_list_tables_and_rows_page_by_page(stub: results_pb2_grpc.ResultsStub) -> None:
    tables = {t.table: t for t in stub.ListTables(results_pb2.ListTablesRequest(), timeout=10).tables}
    assert list(tables) == ["results", "events"]
    results, events = tables["results"], tables["events"]
    assert (results.mode, list(results.keys), results.value_format, results.created) == (
        "upsert", ["window_start", "ip"], "avro", True,
    )  # fmt: skip
    assert (events.mode, events.value_format, events.created) == ("append", "json", True)
    assert [(c.name, c.type, c.nullable) for c in events.columns] == [
        ("seq", "int64", False), ("ip", "string", True), ("status", "int32", True),
    ]  # fmt: skip

    seen: list[dict[str, Any]] = []
    token, pages = "", 0
    while True:
        page = stub.ListRows(results_pb2.ListRowsRequest(table="events", limit=3, page_token=token), timeout=10)
        seen += rows_of(page)
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert pages == 3 and sorted(seen, key=lambda r: r["seq"]) == [event(i) for i in range(7)]
    counts = rows_of(stub.ListRows(results_pb2.ListRowsRequest(table="results"), timeout=10))
    assert [(r["ip"], r["count"]) for r in counts] == [("10.0.0.1", 3), ("10.0.0.2", 4)]  # key order
    first = stub.ListRows(results_pb2.ListRowsRequest(table="results", limit=1), timeout=10)
    rest = stub.ListRows(results_pb2.ListRowsRequest(table="results", page_token=first.next_page_token), timeout=10)
    assert [r["ip"] for r in rows_of(first) + rows_of(rest)] == ["10.0.0.1", "10.0.0.2"] and not rest.next_page_token


def test_bad_arguments_are_refused_naming_the_field(stub: results_pb2_grpc.ResultsStub) -> None:
    other = stub.ListRows(results_pb2.ListRowsRequest(table="results", limit=1), timeout=10).next_page_token
    bad = [
        (results_pb2.ListRowsRequest(table="nope"), grpc.StatusCode.NOT_FOUND, "table: 'nope' is not a stored table"),
        (results_pb2.ListRowsRequest(table=""), grpc.StatusCode.INVALID_ARGUMENT, "table: must not be empty"),
        (results_pb2.ListRowsRequest(table="x" * 5000), grpc.StatusCode.INVALID_ARGUMENT, "is not a table name"),
        (results_pb2.ListRowsRequest(table="events", limit=-1), grpc.StatusCode.INVALID_ARGUMENT, "limit: must be"),
        (results_pb2.ListRowsRequest(table="events", limit=1001), grpc.StatusCode.INVALID_ARGUMENT, "limit: must be"),
        (results_pb2.ListRowsRequest(table="events", page_token="%%"), grpc.StatusCode.INVALID_ARGUMENT,
         "page_token: is not a next_page_token of table 'events'"),
        (results_pb2.ListRowsRequest(table="events", page_token=other), grpc.StatusCode.INVALID_ARGUMENT,
         "page_token"),
        (results_pb2.ListRowsRequest(table="events", page_token="a" * 5000), grpc.StatusCode.INVALID_ARGUMENT,
         "page_token: is longer than 4096"),
    ]  # fmt: skip
    for request, code, message in bad:
        with pytest.raises(grpc.RpcError) as caught:
            stub.ListRows(request, timeout=10)
        assert caught.value.code() == code, request
        assert message in caught.value.details(), caught.value.details()
    with pytest.raises(grpc.RpcError) as caught:
        next(iter(stub.WatchRows(results_pb2.WatchRowsRequest(table="missing"), timeout=10)))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert stub.ListTables(results_pb2.ListTablesRequest(), timeout=10).tables  # the service still serves


def test_watch_rows_receives_rows_stored_after_it_started(
    service: tuple[ConsumerService, TransactionalWriter, TransactionalWriter], stub: results_pb2_grpc.ResultsStub
) -> None:
    _, writer, counts = service
    stream = stub.WatchRows(results_pb2.WatchRowsRequest(table="events"))
    received: list[results_pb2.WatchRowsResponse] = []
    live = threading.Event()

    def collect() -> None:
        try:
            for response in stream:
                received.append(response)
                live.set()
        except grpc.RpcError:
            pass

    thread = threading.Thread(target=collect, daemon=True)
    thread.start()
    assert live.wait(10), "the first (empty) message says the stream is live"
    assert not received[0].rows and sum(received[0].offsets.values()) == 7
    counts.write(Transaction([ip_count(5000, "10.0.0.9", 1)]))  # another table's rows: not streamed here
    writer.write_values([json_value(event(100)), json_value(event(101))])
    wait_until(lambda: sum(len(r.rows) for r in received) >= 2, 20, "the watched rows")
    stream.cancel()
    thread.join(5)
    assert sorted(json.loads(row.json)["seq"] for r in received for row in r.rows) == [100, 101]
    assert all(r.offsets for r in received[1:])


def test_the_results_client_watches_rows_until_it_is_closed(
    service: tuple[ConsumerService, TransactionalWriter, TransactionalWriter],
) -> None:
    _, writer, _ = service
    with ResultsClient(f"127.0.0.1:{service[0].port}", timeout_s=10) as client:
        with pytest.raises(RequestRefused, match="NOT_FOUND: table: 'missing' is not a stored table"):
            next(client.watch_rows("missing"))
        assert [t.table for t in client.list_tables()] == ["results", "events"]
        stream = client.watch_rows("events")
        received: list[RowsUpdate] = []
        live = threading.Event()

        def collect() -> None:
            for response in stream:  # ends without an error once the stream is closed
                received.append(response)
                live.set()
                if sum(len(r.rows) for r in received) >= 1:
                    return

        thread = threading.Thread(target=collect, daemon=True)
        thread.start()
        assert live.wait(10), "the first (empty) message says the stream is live"
        writer.write_values([json_value(event(200))])
        thread.join(20)
        assert not thread.is_alive(), "the watched row"
        stream.close()  # cancels the call
        assert [row["seq"] for r in received for row in r.records()] == [200]
        assert len(client.list_rows("events", limit=1).records()) == 1  # the channel still serves


def test_results_table_commands(service: tuple[ConsumerService, Any, Any], capsys: pytest.CaptureFixture[str]) -> None:
    target = f"127.0.0.1:{service[0].port}"
    assert onceflow(["results", "tables", "--results", target]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("\t") == ["table", "topic", "mode", "format", "keys", "columns"]
    assert [line.split()[0] for line in out[1:]] == ["results", "events"]
    assert onceflow(["results", "rows", "events", "--limit", "2", "--all", "--results", target]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(json.loads(line)["seq"] for line in lines) == list(range(7))
    assert onceflow(["results", "rows", "events", "--limit", "2", "--results", target]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2 and "--page-token" in captured.err
    assert onceflow(["results", "rows", "nope", "--results", target]) == 1
    assert "NOT_FOUND: table: 'nope' is not a stored table" in capsys.readouterr().err
    assert onceflow(["results", "rows", "events", "--limit", "0", "--page-token", "zz", "--results", target]) == 2
    assert "INVALID_ARGUMENT: page_token" in capsys.readouterr().err
    assert onceflow(["results", "tables", "--results", target, "--timeout", "0"]) == 2
    assert "timeout must be a positive number of seconds, got 0.0" in capsys.readouterr().err


def _run_while_writing(args: list[str], write: Callable[[int], None]) -> int:
    """``onceflow args`` (a watch that stops after one batch) while ``write(i)`` commits a batch every
    0.2 s, until the watch returns (a batch written before the watch subscribed is not streamed)."""
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(onceflow(args)), daemon=True)
    thread.start()
    for i in range(150):
        thread.join(0.2)
        if not thread.is_alive():
            break
        write(i)
    assert result, f"{args[:2]} printed no batch"
    return result[0]


def test_the_watch_commands_print_committed_batches(
    service: tuple[ConsumerService, TransactionalWriter, TransactionalWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    _, writer, counts = service
    target = f"127.0.0.1:{service[0].port}"
    watch_rows = ["results", "watch-rows", "events", "--max-batches", "1", "--results", target]
    assert _run_while_writing(watch_rows, lambda i: writer.write_values([json_value(event(1000 + i))])) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[0])["seq"] >= 1000
    # the topic has two partitions and the writer's records land on either: name whichever holds them
    watching = re.search(r"^# watching; offsets ((?:\d+:\d+ ?)+|-)$", captured.err, re.MULTILINE)
    after = re.search(r"^# offsets ((?:\d+:\d+ ?)+)$", captured.err, re.MULTILINE)
    assert watching and after, captured.err
    before_batch = dict(pair.split(":") for pair in watching.group(1).split() if pair != "-")
    after_batch = dict(pair.split(":") for pair in after.group(1).split())
    assert any(int(o) > int(before_batch.get(p, "0")) for p, o in after_batch.items()), captured.err

    watch = ["ipcount", "watch", "--from", "60000", "--max-batches", "1", "--results", target]
    assert _run_while_writing(watch, lambda i: counts.write(Transaction([ip_count(60_000, "10.9.9.9", i + 1)]))) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "window_start,window_end,ip,count" and out[1].startswith("# watching; offsets 0:")
    assert out[2].startswith("60000,65000,10.9.9.9,") and out[3].startswith("# offsets 0:")
