"""A broker that goes away under a connect worker: the admin API waits for it, then answers one line.

Issue 21: on a cluster whose broker was killed, the admin API answered GetConnectorOffsets with a
``_UNKNOWN_PARTITION`` traceback. Reads of the worker's topics now retry transient errors, and what
is still a Kafka error after the retries is UNAVAILABLE with the error's message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract.clients import ConnectClient
from onceflow.core.kafka import RetryPolicy
from onceflow.runtime.service import ConnectWorkerService
from onceflow.runtime.storage import kafka_log

ServiceFactory = Callable[..., ConnectWorkerService]
Waiter = Callable[..., Any]


def _offsets(client: ConnectClient) -> int:
    return len(client.get_connector_offsets("c"))


def test_the_admin_api_waits_through_a_broker_restart_and_answers_unavailable_without_it(
    broker: EmbeddedBroker, service_factory: ServiceFactory, waiter: Waiter, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = service_factory()
    with ConnectClient(f"127.0.0.1:{service.port}") as client:
        config = {"connector.class": "counter", "topic": "outage-out", "rate": "50", "tasks.max": "1"}
        client.create_connector("c", config)
        waiter(lambda: _offsets(client) == 1, what="the task's first committed offset")
        # down for 3 s: the read is retried and answers as if nothing happened
        broker.kill()
        restarter = threading.Timer(3.0, broker.start)
        restarter.start()
        started = time.monotonic()
        assert _offsets(client) == 1
        restarter.join()
        assert time.monotonic() - started >= 2.5, "the broker was back before the read: the test proves nothing"
        # down for longer than the read's retry deadline: one line, UNAVAILABLE, no traceback
        monkeypatch.setattr(kafka_log, "END_OFFSETS_RETRY", RetryPolicy(timeout_s=3))
        broker.kill()
        try:
            with pytest.raises(grpc.RpcError) as info:
                _offsets(client)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "end offsets of _onceflow_connect_offsets: Kafka unavailable for" in (info.value.details() or "")
        finally:
            broker.start()
