"""RunAudit cannot be turned against the consumer: a huge generator truth is refused, a slow audit ends
at its deadline or when its client goes away, and a shutdown (SIGTERM) stops it.

Before these bounds, ``RunAudit`` with a generator count of 10^12 grew memory without end, ignored its
deadline and kept a SIGTERMed consumer alive.

Every audit here is held at its start by :class:`~onceflow.testing.faults.HoldAt` (the audits' injection
point) until the test releases it, so "still running" never depends on the machine's speed: the first
version of these tests used an audit of 5 million events, which one CI run finished in 19 s, before
its 20 s bound.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.ipcount.api import IpCountsClient
from onceflow.ipcount.audit.bounded import AUDIT_STARTED
from onceflow.proto.v1 import ipcount_pb2, ipcount_pb2_grpc
from onceflow.testing.consumer import HeldAuditsConsumerProcess
from onceflow.testing.faults import HoldAt

Stub = ipcount_pb2_grpc.IpCountsStub


def settings(broker: EmbeddedBroker, topic: str, tmp_path: Path, **audit: object) -> dict[str, object]:
    return {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "consumer": {"topic": topic, "group_id": "bounds"},
        "store": {"path": str(tmp_path / "results.db")},
        "server": {"host": "127.0.0.1", "port": 0},
        "metrics": {"port": 0},
        "audit": {"sinks": [{"name": "kafka", "kind": "kafka", "topic": topic}], **audit},
    }


@pytest.fixture
def held() -> Iterator[HoldAt]:
    hold = HoldAt(AUDIT_STARTED)
    yield hold
    hold.release()


@pytest.fixture
def start(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path, held: HoldAt
) -> Iterator[Callable[..., Stub]]:
    """Start a consumer whose audits ``held`` holds (audit settings as keywords); its IP-count service's stub."""
    services: list[ConsumerService] = []
    clients: list[IpCountsClient] = []

    def start_service(**audit: object) -> Stub:
        model = ConsumerSettings.model_validate(settings(broker, make_topic(), tmp_path, **audit))
        services.append(ConsumerService(model, faults=held).start())
        clients.append(IpCountsClient(f"127.0.0.1:{services[-1].port}"))
        return clients[-1].stub

    yield start_service
    for client in clients:
        client.close()
    for service in services:
        service.stop()


def audit_processes_gone(hold: HoldAt, timeout: float = 30) -> None:
    """Every audit process is gone: those of this process's services (started or not yet at the hold)
    and every one that reached the hold (also those of a consumer child process)."""
    deadline = time.monotonic() + timeout
    while alive := [p.pid for p in multiprocessing.active_children()] + [p for p in hold.pids() if _alive(p)]:
        assert time.monotonic() < deadline, f"audit processes {alive} still run"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def generator(count: int) -> ipcount_pb2.RunAuditRequest:
    return ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=count))


def test_a_huge_generator_truth_is_refused_with_the_limit(start: Callable[..., Stub], held: HoldAt) -> None:
    stub = start()
    with pytest.raises(grpc.RpcError) as raised:
        stub.RunAudit(generator(10**12), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "1000000000000 events is more than the limit of 10000000" in (raised.value.details() or "")
    assert held.held() == 0, "an audit process was started"


def test_the_call_deadline_stops_the_audit(start: Callable[..., Stub], held: HoldAt) -> None:
    stub = start()
    with pytest.raises(grpc.RpcError) as raised:
        stub.RunAudit(generator(10), timeout=4)
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    audit_processes_gone(held)
    # the server is free again at once: an audit answers
    held.release()
    assert stub.RunAudit(generator(10), timeout=30).sinks


def test_a_client_that_goes_away_stops_the_audit(start: Callable[..., Stub], held: HoldAt) -> None:
    stub = start()
    future = stub.RunAudit.future(generator(10), timeout=120)
    held.wait_held(1, timeout=60)
    future.cancel()
    audit_processes_gone(held)
    # the audit process was killed: a later audit is not queued behind it
    held.release()
    assert stub.RunAudit(generator(10), timeout=30).sinks


def test_max_duration_bounds_an_audit_without_a_deadline(start: Callable[..., Stub], held: HoldAt) -> None:
    stub = start(max_duration_s=2)
    with pytest.raises(grpc.RpcError) as raised:
        stub.RunAudit(generator(10))
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "max_duration_s=2" in (raised.value.details() or "")
    audit_processes_gone(held)


@pytest.mark.slow
def test_sigterm_stops_a_consumer_in_the_middle_of_an_audit(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path, held: HoldAt
) -> None:
    process = HeldAuditsConsumerProcess(tmp_path / "consumer", settings(broker, make_topic(), tmp_path), held).start()
    try:
        with IpCountsClient(process.target) as client:
            stub = client.stub
            future = stub.RunAudit.future(generator(10), timeout=300)
            held.wait_held(1, timeout=60)
            assert process.pid is not None
            os.kill(process.pid, signal.SIGTERM)
            assert process.wait(30) == 0, process.log_tail()
            with pytest.raises(grpc.RpcError) as raised:
                future.result(10)
            assert raised.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
        audit_processes_gone(held)
    finally:
        process.stop()
