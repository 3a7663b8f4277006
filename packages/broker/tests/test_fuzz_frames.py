"""Hostile input: random frames must never take the broker down or damage acknowledged data."""

from __future__ import annotations

import socket
import struct

from confluent_kafka import Consumer, Producer, TopicPartition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.static.primitive import Records

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.broker.protocol.versions import SUPPORTED_VERSIONS
from onceflow.testing.broker.wire import encode_request

ACKED = [f"acked-{i}".encode() for i in range(20)]


def _send_and_close(bootstrap: str, data: bytes) -> None:
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=2) as sock:
        try:
            sock.sendall(data)
            sock.settimeout(0.2)
            sock.recv(65536)
        except OSError:
            pass


def _header(api_key: int, version: int, correlation_id: int, client_id: bytes, flexible_tags: bool) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    return header + (b"\x00" if flexible_tags else b"")


random_bytes = st.binary(max_size=512)
known_api = st.sampled_from(sorted(SUPPORTED_VERSIONS)).flatmap(
    lambda key: st.tuples(st.just(key), st.integers(SUPPORTED_VERSIONS[key][0], SUPPORTED_VERSIONS[key][1]))
)
any_api = st.tuples(st.integers(-(2**15), 2**15 - 1), st.integers(-(2**15), 2**15 - 1))


st.register_type_strategy(Records, st.binary(max_size=256).map(Records))
_REQUEST_TYPES = [
    load_request_schema(key, version)
    for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())
    for version in range(low, high + 1)
]


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["raw", "framed-random", "valid-header", "any-api", "schema-valid"]))
    if kind == "schema-valid":
        request = draw(st.sampled_from(_REQUEST_TYPES).flatmap(st.from_type))
        body = encode_request(request, draw(st.integers(0, 2**31 - 1)), "fuzz")
        return struct.pack(">i", len(body)) + body
    if kind == "raw":
        return draw(random_bytes)
    if kind == "framed-random":
        body = draw(random_bytes)
        return struct.pack(">i", len(body)) + body
    api_key, version = draw(known_api if kind == "valid-header" else any_api)
    body = _header(api_key, version, draw(st.integers(0, 2**31 - 1)), b"fuzz", draw(st.booleans())) + draw(random_bytes)
    return struct.pack(">i", len(body)) + body


def _produce_acked(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in ACKED:
        producer.produce("fuzz-acked", value=value)
    assert producer.flush(15) == 0


def _read_all(bootstrap: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-check", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("fuzz-acked", 0, 0)])
    seen: list[bytes] = []
    for _ in range(100):
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.append(message.value() or b"")
        if len(seen) >= len(ACKED):
            break
    consumer.close()
    return seen


def test_random_frames_do_not_hurt_the_broker(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _produce_acked(bootstrap)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(frames())
    def attack(data: bytes) -> None:
        _send_and_close(bootstrap, data)

    attack()
    assert broker.is_running(), broker.log_tail()
    assert _read_all(bootstrap) == ACKED
