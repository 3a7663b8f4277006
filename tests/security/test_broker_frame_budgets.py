"""Attacks on the embedded broker's request budgets (issue 22, item 4): partial frames that fill the
shared ``queued.max.request.bytes`` must not starve other clients, also before SASL login, and slow
frames are cut off.

Each test drives a real broker child process with raw sockets (the attacker) and real clients (the
bystanders), and checks the refusal the attacker gets and the service the others keep.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import produce_acked
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.security import add_embedded_users, sasl_config
from onceflow.testing.broker.wire import WireClient

MIB = 1024 * 1024
SHARED = 4 * MIB
USERS = {"admin": "admin-secret", "alice": "alice-secret"}


class PartialFrame:
    """An attacker's connection: announces a ``size``-byte frame, sends ``sent`` bytes of it, stalls."""

    def __init__(self, port: int, size: int, sent: int) -> None:
        self.client = WireClient(f"127.0.0.1:{port}")
        self.client.send_raw(struct.pack(">i", size))
        remaining = sent
        try:
            while remaining > 0:
                remaining -= self.client.sock.send(b"\0" * min(remaining, MIB))
        except OSError:
            pass  # the broker closed it: the budget refused it

    def closed_by_peer(self, timeout: float) -> bool:
        """True once the broker has closed this connection (reads until EOF or ``timeout``)."""
        return self.client.is_closed_by_peer(timeout)

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def attackers() -> Iterator[list[PartialFrame]]:
    opened: list[PartialFrame] = []
    yield opened
    for attacker in opened:
        attacker.close()


def _api_versions_ok(client: WireClient) -> bool:
    answer = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    return answer.error_code is ErrorCode.none


def test_partial_frames_that_fill_the_shared_budget_do_not_starve_other_clients(
    broker_factory: BrokerFactory, attackers: list[PartialFrame]
) -> None:
    broker = broker_factory(queued_max_request_bytes=SHARED, request_receive_timeout_ms=60_000)
    # Four frames just under the shared budget, 2 MiB of each sent: every connection holds 1 MiB on
    # its own budget and 1 MiB of the shared 4 MiB, so the shared budget is full. A probe that needs
    # shared budget is refused once the broker has read them all.
    for _ in range(4):
        attackers.append(PartialFrame(broker.port, SHARED - 1, 2 * MIB))
    deadline = time.monotonic() + 30
    while True:
        probe = PartialFrame(broker.port, SHARED - 1, int(1.5 * MIB))
        attackers.append(probe)
        if probe.closed_by_peer(timeout=1):
            break
        assert time.monotonic() < deadline, "the shared budget never filled up"
    # An ordinary client is served from its own budget: metadata, a produce of a few KiB.
    with WireClient(broker.bootstrap_servers) as bystander:
        assert _api_versions_ok(bystander)
    acked = produce_acked(broker.bootstrap_servers, "orders", [b"x" * 4096] * 20, timeout=30)
    assert len(acked) == 20
    assert "queued.max.request.bytes" in broker.log_tail()


def test_a_slow_frame_is_cut_off_and_frees_its_budget(
    broker_factory: BrokerFactory, attackers: list[PartialFrame]
) -> None:
    broker = broker_factory(queued_max_request_bytes=SHARED, request_receive_timeout_ms=1000)
    slow = PartialFrame(broker.port, SHARED, 2 * MIB)
    attackers.append(slow)
    assert slow.closed_by_peer(timeout=20)
    assert "request.receive.timeout.ms" in broker.log_tail()
    # what it held is free again: a frame that needs most of the shared budget gets it
    big = PartialFrame(broker.port, SHARED + MIB - 1, int(4.5 * MIB))
    attackers.append(big)
    assert not big.closed_by_peer(timeout=0.5)


@pytest.fixture
def sasl_broker(tmp_path: Path, broker_factory: BrokerFactory) -> EmbeddedBroker:
    data_dir = tmp_path / "broker"
    add_embedded_users(data_dir, USERS)
    return broker_factory(
        data_dir,
        security_protocol="SASL_PLAINTEXT",
        super_users=["User:admin"],
        queued_max_request_bytes=SHARED,
        request_receive_timeout_ms=60_000,
    )


def test_before_login_a_frame_is_capped_and_never_draws_on_the_shared_budget(
    sasl_broker: EmbeddedBroker, attackers: list[PartialFrame]
) -> None:
    # a frame larger than sasl.server.max.receive.size is refused at its size header (one just under
    # the shared budget, almost all sent, would otherwise hold all of it)
    huge = PartialFrame(sasl_broker.port, SHARED - 1, SHARED - 2)
    attackers.append(huge)
    assert huge.closed_by_peer(timeout=10)
    assert "sasl.server.max.receive.size" in sasl_broker.log_tail()
    # many unauthenticated connections stalling in a frame just under the cap take nothing from the
    # logged-in clients
    for _ in range(40):
        attackers.append(PartialFrame(sasl_broker.port, 64 * 1024, 60 * 1024))
    assert not attackers[-1].closed_by_peer(timeout=0.5)
    config = sasl_config(sasl_broker.bootstrap_servers, "alice", USERS["alice"])
    started = time.monotonic()
    acked = produce_acked(sasl_broker.bootstrap_servers, "orders", [b"y" * 8192] * 200, config=config, timeout=30)
    assert len(acked) == 200, f"{len(acked)} acked after {time.monotonic() - started:.1f}s"
