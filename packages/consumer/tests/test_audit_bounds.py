"""RunAudit cannot be turned against the consumer: a huge generator truth is refused, a slow audit ends
at its deadline or when its client goes away, and a shutdown (SIGTERM) stops it.

Before these bounds, ``RunAudit`` with a generator count of 10^12 grew memory without end, ignored its
deadline and kept a SIGTERMed consumer alive.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.core.grpc import open_channel
from onceflow.core.toml_writer import to_toml
from onceflow.proto.v1 import results_pb2, results_pb2_grpc

from .conftest import wait_until

ONCEFLOW = str(Path(sys.executable).parent / "onceflow")
#: Large enough that the generator truth takes minutes, under the limit so it starts.
SLOW_COUNT = 5_000_000


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
def stub(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path
) -> Iterator[results_pb2_grpc.ResultsStub]:
    model = ConsumerSettings.model_validate(settings(broker, make_topic(), tmp_path, max_duration_s=20))
    service = ConsumerService(model).start()
    with open_channel(f"127.0.0.1:{service.port}") as channel:
        yield results_pb2_grpc.ResultsStub(channel)  # type: ignore[no-untyped-call]
    service.stop()


def assert_no_audit_still_runs() -> None:
    """This process (which hosts the service) is idle: no server thread goes on computing a truth."""
    time.sleep(1)
    cpu = time.process_time()
    time.sleep(3)
    assert time.process_time() - cpu < 1.0, "an abandoned audit is still running in the server"


def generator(count: int) -> results_pb2.RunAuditRequest:
    return results_pb2.RunAuditRequest(generator=results_pb2.GeneratorTruth(seed=1, count=count))


def test_a_huge_generator_truth_is_refused_with_the_limit(stub: results_pb2_grpc.ResultsStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        stub.RunAudit(generator(10**12), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "1000000000000 events is more than the limit of 10000000" in (raised.value.details() or "")


def test_the_call_deadline_stops_the_audit(stub: results_pb2_grpc.ResultsStub) -> None:
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as raised:
        stub.RunAudit(generator(SLOW_COUNT), timeout=4)
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 10
    assert_no_audit_still_runs()
    # the server is free again at once: a small audit answers
    assert stub.RunAudit(generator(10), timeout=30).sinks


def test_a_client_that_goes_away_stops_the_audit(stub: results_pb2_grpc.ResultsStub) -> None:
    future = stub.RunAudit.future(generator(SLOW_COUNT), timeout=120)
    time.sleep(3)
    future.cancel()
    assert_no_audit_still_runs()
    # the audit child was killed: a later audit is not queued behind it
    started = time.monotonic()
    assert stub.RunAudit(generator(10), timeout=30).sinks
    assert time.monotonic() - started < 20


def test_max_duration_bounds_an_audit_without_a_deadline(stub: results_pb2_grpc.ResultsStub) -> None:
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as raised:
        stub.RunAudit(generator(SLOW_COUNT))
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "max_duration_s=20" in (raised.value.details() or "")
    assert time.monotonic() - started < 40


@pytest.mark.slow
def test_sigterm_stops_a_consumer_in_the_middle_of_an_audit(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    config = tmp_path / "consumer.toml"
    config.write_text(to_toml(settings(broker, make_topic(), tmp_path)))
    ready = tmp_path / "ready.json"
    process = subprocess.Popen(
        [ONCEFLOW, "consumer", "--config", str(config), "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(ready.exists, 60, "the consumer to serve")
        port = json.loads(ready.read_text())["port"]
        with open_channel(f"127.0.0.1:{port}") as channel:
            stub = results_pb2_grpc.ResultsStub(channel)  # type: ignore[no-untyped-call]
            future = stub.RunAudit.future(generator(SLOW_COUNT), timeout=300)
            time.sleep(3)
            os.kill(process.pid, signal.SIGTERM)
            code = process.wait(30)
            assert code == 0, process.stderr.read() if process.stderr else ""
            with pytest.raises(grpc.RpcError) as raised:
                future.result(10)
            assert raised.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
