"""The IP-count service (``onceflow.v1.IpCounts``) of a running consumer: counts, top N, watch, audit,
bad arguments, and the ``onceflow ipcount counts|top`` commands."""

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
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.core.avro import ACCESS_EVENT_SERDE, IpCount
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.api import GeneratorTruth, IpCountsClient, IpCountsUpdate
from onceflow.ipcount.api import IpCount as AnsweredCount
from onceflow.ipcount.audit import generator_model, source_topic_truth
from onceflow.ipcount.consumer.views import IpCountViews
from onceflow.ipcount.traffic import event, expected_counts
from onceflow.proto.v1 import ipcount_pb2
from onceflow.testing.consumer.ip_counts import W0, Transaction, TransactionalWriter, ip_count, results_of, wait_until

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
    wait_until(lambda: len(results_of(store)) == len(rows), 30, "the consumer to apply the rows")
    yield running, writer
    running.stop()


@pytest.fixture
def client(service: tuple[ConsumerService, TransactionalWriter]) -> Iterator[IpCountsClient]:
    with IpCountsClient(f"127.0.0.1:{service[0].port}", timeout_s=10) as client:
        yield client


def test_counts_top_and_invalid_arguments(client: IpCountsClient) -> None:
    truth = expected_counts(generator_model(SEED, GENERATOR), COUNT)
    ip = truth[0].ip
    mine = [r for r in truth if r.ip == ip]
    counts = client.get_ip_counts(ip)
    assert counts == tuple(AnsweredCount(r.window_start, r.window_end, ip, r.count) for r in mine)
    second = mine[1].window_start
    ranged = client.get_ip_counts(ip, second, second + 1)
    assert [c.window_start_ms for c in ranged] == [second]

    window = truth[len(truth) // 2].window_start
    top = client.get_top_ips(window, 3)
    in_window = sorted((r for r in truth if r.window_start == window), key=lambda r: (-r.count, r.ip))
    assert top.window_start_ms == window
    assert [(c.ip, c.count) for c in top.counts] == [(r.ip, r.count) for r in in_window[:3]]
    latest = client.get_top_ips(limit=1)
    newest = max(r.window_start for r in truth)
    assert latest.window_start_ms == newest - 10_000  # end + 5 s lateness <= newest window start

    stub = client.stub  # requests the client would not build

    bad: list[tuple[Callable[..., object], object, str]] = [
        (stub.GetIpCounts, ipcount_pb2.GetIpCountsRequest(ip=""), "ip: must not be empty"),
        (stub.GetIpCounts, ipcount_pb2.GetIpCountsRequest(ip="x", window_start_from_ms=9, window_start_to_ms=5),
         "is after window_start_to_ms"),
        (stub.GetTopIps, ipcount_pb2.GetTopIpsRequest(limit=0), "limit: must be in 1..10000"),
        (stub.GetTopIps, ipcount_pb2.GetTopIpsRequest(limit=10_001), "limit: must be in 1..10000"),
        (stub.GetTopIps, ipcount_pb2.GetTopIpsRequest(limit=1, window_start_ms=-1), "window_start_ms"),
        (stub.RunAudit, ipcount_pb2.RunAuditRequest(), "truth: set generator"),
        (stub.RunAudit, ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=-1)),
         "generator.count"),
        (stub.RunAudit, ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=1),
                                                    sinks=["nope"]), "unknown sink(s) nope"),
    ]  # fmt: skip
    for method, request, message in bad:
        with pytest.raises(grpc.RpcError) as caught:
            method(request, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, request
        assert message in caught.value.details(), caught.value.details()


def test_watch_receives_rows_applied_after_it_started(
    service: tuple[ConsumerService, TransactionalWriter], client: IpCountsClient
) -> None:
    _, writer = service
    stream = client.watch_results(W0 + 3_600_000)
    received: list[IpCountsUpdate] = []
    live = threading.Event()

    def collect() -> None:
        for update in stream:
            received.append(update)
            live.set()
            if sum(len(r.counts) for r in received) >= 2:
                return  # a generator is closed by the thread iterating it, not while another one is inside it

    thread = threading.Thread(target=collect, daemon=True)
    thread.start()
    assert live.wait(10), "the first (empty) message says the stream is live"
    assert not received[0].counts and sum(received[0].offsets.values()) > 0
    hour = 3_600_000
    writer.write(Transaction([ip_count(W0 + hour - 5000, "10.7.7.7", 1)]))  # before window_start_from: filtered out
    writer.write(Transaction([ip_count(W0 + hour, "10.7.7.7", 4), ip_count(W0 + hour, "10.7.7.8", 2)]))
    thread.join(20)
    assert not thread.is_alive(), "the watched rows"
    stream.close()  # cancels the call
    rows = sorted((c.window_start_ms, c.ip, c.count) for r in received for c in r.counts)
    assert rows == [(W0 + hour, "10.7.7.7", 4), (W0 + hour, "10.7.7.8", 2)]
    assert all(r.offsets for r in received[1:])


def test_run_audit_over_grpc(service: tuple[ConsumerService, TransactionalWriter], client: IpCountsClient) -> None:
    exact = client.run_audit(GeneratorTruth(SEED, COUNT), timeout_s=60)
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
    wait_until(lambda: IpCountViews(store).counts_for_ip(first.ip, first.window_start, first.window_start + 1)[0].count
               == first.count + 5, 20, "the update")  # fmt: skip
    report = client.run_audit(GeneratorTruth(SEED, COUNT), ["consumer"], timeout_s=60)
    assert not report.exact
    (consumer,) = report.sinks
    assert (consumer.sink, consumer.mismatched, consumer.missing, consumer.extra) == ("consumer", 1, 0, 0)
    example = consumer.examples[0]
    assert (example.window_start_ms, example.ip, example.expected, example.actual) == (
        first.window_start, first.ip, first.count, first.count + 5,
    )  # fmt: skip


def test_ipcount_query_commands(
    service: tuple[ConsumerService, TransactionalWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"127.0.0.1:{service[0].port}"
    truth = expected_counts(generator_model(SEED, GENERATOR), COUNT)
    ip = truth[0].ip
    assert onceflow(["ipcount", "counts", "--ip", ip, "--results", target]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "window_start,window_end,ip,count"
    assert out[1:] == [f"{r.window_start},{r.window_end},{r.ip},{r.count}" for r in truth if r.ip == ip]
    assert onceflow(["ipcount", "top", "--limit", "2", "--results", target]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# window_start=") and len(out) == 4
    assert onceflow(["ipcount", "top", "--limit", "0", "--results", target]) == 2
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
