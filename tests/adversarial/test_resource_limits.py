"""Clients cannot exhaust the broker's memory, descriptors or connections (issue 14).

Each test drives a real broker child process from raw sockets and the wire client, then checks the
broker still serves: partial huge frames are bounded by ``queued.max.request.bytes``, idle
connections are closed after ``connections.max.idle.ms``, ``max.connections.per.ip`` refuses the
extra connection, and failed CreateTopics leave no descriptor behind.
"""

# Raw kio requests take plain ints/strs where kio declares NewType wrappers; the broker reads them
# off the wire the same way, so the wrappers add nothing here.
# mypy: disable-error-code="arg-type"

from __future__ import annotations

import contextlib
import datetime
import os
import resource
import socket
import struct
import threading
import time
from pathlib import Path

from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32, i32Timedelta

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.wire import WireClient

MIB = 1024 * 1024


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _serves(broker: EmbeddedBroker) -> bool:
    with WireClient(broker.bootstrap_servers) as client:
        response = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        return response.error_code is ErrorCode.none


def _send_partial_frame(port: int, announced: int, sent: int, done: list[int]) -> None:
    """Announce an ``announced``-byte frame and send ``sent`` bytes of it; hold the socket open."""
    chunk = b"\0" * MIB
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(30)
        total = 0
        with contextlib.suppress(OSError):
            sock.sendall(struct.pack(">i", announced))
            while total < sent:
                sock.sendall(chunk)
                total += len(chunk)
        done.append(total)
        time.sleep(1.0)


def test_partial_huge_frames_stay_within_queued_max_request_bytes(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(queued_max_request_bytes=16 * MIB)
    assert _serves(broker)
    pid = broker.pid
    assert pid is not None
    rss_before = _status_kib(pid, "VmRSS")
    done: list[int] = []
    senders = [
        threading.Thread(target=_send_partial_frame, args=(broker.port, 95 * MIB, 40 * MIB, done)) for _ in range(4)
    ]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(60)
    growth_mib = (_status_kib(pid, "VmHWM") - rss_before) / 1024
    assert growth_mib < 64, f"partial frames grew the broker by {growth_mib:.0f} MiB"
    assert _serves(broker)


def test_a_frame_above_socket_request_max_bytes_is_refused_before_buffering(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        client.send_raw(struct.pack(">i", 100 * MIB + 1))
        assert client.is_closed_by_peer()
    assert _serves(broker)


def test_an_idle_connection_is_closed_after_connections_max_idle_ms(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(connections_max_idle_ms=500)
    with WireClient(broker.bootstrap_servers) as busy, WireClient(broker.bootstrap_servers) as idle:
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        idle.request(request)
        for _ in range(8):  # a connection in use stays open
            busy.request(request)
            time.sleep(0.2)
        assert idle.is_closed_by_peer(timeout=5)
        busy.request(request)


def test_max_connections_per_ip_refuses_the_extra_connection(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(max_connections_per_ip=5)
    time.sleep(0.5)  # the start-up readiness probe's connection is gone
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    clients = [WireClient(broker.bootstrap_servers) for _ in range(5)]
    try:
        for client in clients:
            client.request(request)
        with WireClient(broker.bootstrap_servers) as extra:
            assert extra.is_closed_by_peer()
        clients.pop().close()
        time.sleep(0.2)
        assert _serves(broker)
    finally:
        for client in clients:
            client.close()


def _create_topics(client: WireClient, name: str, partitions: int) -> ErrorCode:
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=name, num_partitions=i32(partitions), replication_factor=i16(1), assignments=(), configs=()
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
    )
    code: ErrorCode = client.request(request).topics[0].error_code
    return code


def test_failed_create_topics_leak_no_descriptors(broker: EmbeddedBroker) -> None:
    # Partition 1 cannot be created (its directory's path is a regular file), after partition 0's
    # files are open: every attempt must roll back.
    (broker.data_dir / "logs" / "doomed-1").write_text("in the way")
    pid = broker.pid
    assert pid is not None
    client = WireClient(broker.bootstrap_servers)
    try:
        assert _create_topics(client, "doomed", 2) is ErrorCode.kafka_storage_error
        fds_before = _fd_count(pid)
        for _ in range(2000):
            assert _create_topics(client, "doomed", 2) is ErrorCode.kafka_storage_error
        assert _fd_count(pid) <= fds_before + 5
        assert not (broker.data_dir / "logs" / "doomed-0").exists()
        assert _create_topics(client, "fine", 2) is ErrorCode.none
    finally:
        client.close()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_accept_failing_for_lack_of_descriptors_backs_off_and_recovers(broker: EmbeddedBroker) -> None:
    pid = broker.pid
    assert pid is not None
    limit = _fd_count(pid) + 16
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
    sockets = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(40)]
    try:
        time.sleep(0.5)  # accept() now fails with EMFILE
        cpu_before = _cpu_seconds(pid)
        time.sleep(2.0)
        spent = _cpu_seconds(pid) - cpu_before
        assert spent < 0.5, f"the broker spent {spent:.2f}s of CPU in 2s while accept() failed"
        log_lines = broker.log_path.read_text().count("\n")
        assert log_lines < 200, f"the broker log has {log_lines} lines: accept() failures flood it"
    finally:
        for sock in sockets:
            sock.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            assert _serves(broker)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
