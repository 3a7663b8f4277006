"""The reference article's scenario: the broker appends a batch, the response is lost, the
producer retries. With idempotence the log holds one copy; without it, a duplicate."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.proxy import KafkaFaultProxy

N = 2_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_with_lost_responses(
    tmp_path: Path, broker_factory: BrokerFactory, producer_config: dict[str, object]
) -> tuple[list[bytes], int]:
    """Produce N values through a proxy that loses 3 produce responses; return what the log holds."""
    port = free_port()
    with KafkaFaultProxy("127.0.0.1", port) as proxy:
        # Clients must reach the broker only through the proxy, so the broker advertises it.
        broker_factory(tmp_path / "broker", port=port, advertised=proxy.bootstrap_servers)
        create_topic(proxy.bootstrap_servers, "events", partitions=1)
        proxy.plan.arm(3)
        values = [str(i).encode() for i in range(N)]
        acked = produce_acked(
            proxy.bootstrap_servers,
            "events",
            values,
            partition=0,
            config={"linger.ms": 5, "batch.num.messages": 100, **producer_config},
        )
        assert sorted(v for _, _, v in acked) == sorted(values)
        dropped = proxy.dropped[0]
        log = [r.value for r in read_topic(proxy.bootstrap_servers, "events", isolation_level="read_uncommitted")]
    return [v for v in log if v is not None], dropped


def test_idempotent_retry_of_a_lost_response_leaves_exactly_one_copy(
    tmp_path: Path, broker_factory: BrokerFactory
) -> None:
    log, dropped = run_with_lost_responses(tmp_path, broker_factory, {"enable.idempotence": True})
    assert dropped == 3
    assert log == [str(i).encode() for i in range(N)], "one copy of every record, in order"


def test_without_idempotence_the_same_retry_duplicates(tmp_path: Path, broker_factory: BrokerFactory) -> None:
    log, dropped = run_with_lost_responses(
        tmp_path,
        broker_factory,
        {"enable.idempotence": False, "acks": "all", "retries": 10, "max.in.flight.requests.per.connection": 1},
    )
    assert dropped == 3
    copies = Counter(log)
    assert set(copies) == {str(i).encode() for i in range(N)}
    duplicated = [v for v, n in copies.items() if n > 1]
    assert duplicated, "a retried batch whose response was lost is written twice without idempotence"
    assert len(log) > N
