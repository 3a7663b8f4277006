"""The Results gRPC API of a running consumer service: counts, top N, watch, audit, bad arguments,
and the ``onceflow results`` commands."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from confluent_kafka import Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.cli.app import main as onceflow
from onceflow.consumer.audit import generator_model, source_topic_truth
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.core.avro import ACCESS_EVENT_SERDE, IpCount
from onceflow.core.contract.clients import ResultsClient
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.traffic import event, expected_counts
from onceflow.proto.v1 import results_pb2, results_pb2_grpc

from .conftest import W0, Transaction, TransactionalWriter, ip_count, wait_until

SEED, COUNT = 3, 3_000
GENERATOR = {"ips": "20", "event.time.rate": "100"}


@pytest.fixture
def service(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path
) -> Iterator[tuple[ConsumerService, TransactionalWriter]]:
    topic = make_topic(partitions=2)
    settings = ConsumerSettings.model_validate(
        {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "consumer": {"topic": topic, "group_id": "api", "max_batch_ms": 20},
            "store": {"path": str(tmp_path / "results.db")},
            "server": {"port": 0},
            "audit": {"generator": GENERATOR, "sinks": [{"name": "kafka", "kind": "kafka", "topic": topic}]},
        }
    )
    writer = TransactionalWriter(broker.bootstrap_servers, topic)
    # The generator's counts, as the job would emit them.
    rows = [
        IpCount(window_start=r.window_start, window_end=r.window_end, ip=r.ip, count=r.count)
        for r in expected_counts(generator_model(SEED, GENERATOR), COUNT)
    ]
    writer.write(Transaction(rows))
    running = ConsumerService(settings).start()
    assert running._api_store is not None
    store = running._api_store
    wait_until(lambda: len(store.all_results()) == len(rows), 30, "the consumer to apply the rows")
    yield running, writer
    running.stop()


@pytest.fixture
def stub(service: tuple[ConsumerService, TransactionalWriter]) -> Iterator[results_pb2_grpc.ResultsStub]:
    with ResultsClient(f"127.0.0.1:{service[0].port}") as client:
        yield client.stub


def test_counts_top_and_invalid_arguments(stub: results_pb2_grpc.ResultsStub) -> None:
    truth = expected_counts(generator_model(SEED, GENERATOR), COUNT)
    ip = truth[0].ip
    mine = [r for r in truth if r.ip == ip]
    counts = stub.GetIpCounts(results_pb2.GetIpCountsRequest(ip=ip), timeout=10).counts
    assert [(c.window_start_ms, c.window_end_ms, c.count) for c in counts] == [
        (r.window_start, r.window_end, r.count) for r in mine
    ]
    second = mine[1].window_start
    ranged = stub.GetIpCounts(
        results_pb2.GetIpCountsRequest(ip=ip, window_start_from_ms=second, window_start_to_ms=second + 1), timeout=10
    )
    assert [c.window_start_ms for c in ranged.counts] == [second]

    window = truth[len(truth) // 2].window_start
    top = stub.GetTopIps(results_pb2.GetTopIpsRequest(window_start_ms=window, limit=3), timeout=10)
    in_window = sorted((r for r in truth if r.window_start == window), key=lambda r: (-r.count, r.ip))
    assert [(c.ip, c.count) for c in top.counts] == [(r.ip, r.count) for r in in_window[:3]]
    latest = stub.GetTopIps(results_pb2.GetTopIpsRequest(limit=1), timeout=10)
    newest = max(r.window_start for r in truth)
    assert latest.window_start_ms == newest - 10_000  # end + 5 s lateness <= newest window start

    bad: list[tuple[Callable[..., object], object, str]] = [
        (stub.GetIpCounts, results_pb2.GetIpCountsRequest(ip=""), "ip: must not be empty"),
        (stub.GetIpCounts, results_pb2.GetIpCountsRequest(ip="x", window_start_from_ms=9, window_start_to_ms=5),
         "is after window_start_to_ms"),
        (stub.GetTopIps, results_pb2.GetTopIpsRequest(limit=0), "limit: must be in 1..10000"),
        (stub.GetTopIps, results_pb2.GetTopIpsRequest(limit=10_001), "limit: must be in 1..10000"),
        (stub.GetTopIps, results_pb2.GetTopIpsRequest(limit=1, window_start_ms=-1), "window_start_ms"),
        (stub.RunAudit, results_pb2.RunAuditRequest(), "truth: set generator"),
        (stub.RunAudit, results_pb2.RunAuditRequest(generator=results_pb2.GeneratorTruth(seed=1, count=-1)),
         "generator.count"),
        (stub.RunAudit, results_pb2.RunAuditRequest(generator=results_pb2.GeneratorTruth(seed=1, count=1),
                                                    sinks=["nope"]), "unknown sink(s) nope"),
    ]  # fmt: skip
    for method, request, message in bad:
        with pytest.raises(grpc.RpcError) as caught:
            method(request, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, request
        assert message in caught.value.details(), caught.value.details()


def test_watch_receives_rows_applied_after_it_started(
    service: tuple[ConsumerService, TransactionalWriter], stub: results_pb2_grpc.ResultsStub
) -> None:
    _, writer = service
    stream = stub.WatchResults(results_pb2.WatchResultsRequest(window_start_from_ms=W0 + 3_600_000))
    received: list[results_pb2.WatchResultsResponse] = []
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
    assert not received[0].counts and sum(received[0].offsets.values()) > 0
    hour = 3_600_000
    writer.write(Transaction([ip_count(W0 + hour - 5000, "10.7.7.7", 1)]))  # before window_start_from: filtered out
    writer.write(Transaction([ip_count(W0 + hour, "10.7.7.7", 4), ip_count(W0 + hour, "10.7.7.8", 2)]))
    wait_until(lambda: sum(len(r.counts) for r in received) >= 2, 20, "the watched rows")
    stream.cancel()
    thread.join(5)
    rows = sorted((c.window_start_ms, c.ip, c.count) for r in received for c in r.counts)
    assert rows == [(W0 + hour, "10.7.7.7", 4), (W0 + hour, "10.7.7.8", 2)]
    assert all(r.offsets for r in received[1:])


def test_run_audit_over_grpc(
    service: tuple[ConsumerService, TransactionalWriter], stub: results_pb2_grpc.ResultsStub
) -> None:
    exact = stub.RunAudit(
        results_pb2.RunAuditRequest(generator=results_pb2.GeneratorTruth(seed=SEED, count=COUNT)), timeout=60
    )
    assert exact.exact and [s.sink for s in exact.sinks] == ["kafka", "consumer"]
    assert all(s.exact and s.matched == s.windows_expected > 0 for s in exact.sinks)

    # A committed update changes one count: both the topic and the consumer's store now differ from the truth.
    truth = expected_counts(generator_model(SEED, GENERATOR), COUNT)
    first = truth[0]
    _, writer = service
    writer.write(Transaction([IpCount(window_start=first.window_start, window_end=first.window_end, ip=first.ip,
                                      count=first.count + 5)]))  # fmt: skip
    assert service[0]._api_store is not None
    store = service[0]._api_store
    wait_until(lambda: store.counts_for_ip(first.ip, first.window_start, first.window_start + 1)[0].count
               == first.count + 5, 20, "the update")  # fmt: skip
    report = stub.RunAudit(
        results_pb2.RunAuditRequest(generator=results_pb2.GeneratorTruth(seed=SEED, count=COUNT), sinks=["consumer"]),
        timeout=60,
    )
    assert not report.exact
    (consumer,) = report.sinks
    assert (consumer.sink, consumer.mismatched, consumer.missing, consumer.extra) == ("consumer", 1, 0, 0)
    example = consumer.examples[0]
    assert (example.window_start_ms, example.ip, example.expected, example.actual) == (
        first.window_start, first.ip, first.count, first.count + 5,
    )  # fmt: skip


def test_results_commands(
    service: tuple[ConsumerService, TransactionalWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"127.0.0.1:{service[0].port}"
    truth = expected_counts(generator_model(SEED, GENERATOR), COUNT)
    ip = truth[0].ip
    assert onceflow(["results", "counts", "--ip", ip, "--results", target]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "window_start,window_end,ip,count"
    assert out[1:] == [f"{r.window_start},{r.window_end},{r.ip},{r.count}" for r in truth if r.ip == ip]
    assert onceflow(["results", "top", "--limit", "2", "--results", target]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# window_start=") and len(out) == 4
    assert onceflow(["results", "top", "--limit", "0", "--results", target]) == 2
    assert "INVALID_ARGUMENT: limit: must be in 1..10000" in capsys.readouterr().err


def test_source_topic_truth_stops_at_the_last_stable_offset(broker: EmbeddedBroker) -> None:
    """An open transaction on the source topic neither blocks the recount nor is counted."""
    topic = f"ip_count_source_{uuid.uuid4().hex[:6]}"
    model = generator_model(SEED, GENERATOR)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"t-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(100):
        producer.produce(topic, value=ACCESS_EVENT_SERDE.encode(event(model, i)))
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(100, 150):
        producer.produce(topic, value=ACCESS_EVENT_SERDE.encode(event(model, i)))
    producer.flush(30)
    try:
        truth = source_topic_truth(KafkaSettings(bootstrap_servers=broker.bootstrap_servers), topic, timeout=20)
    finally:
        producer.abort_transaction(30)
    assert truth.events == 100
