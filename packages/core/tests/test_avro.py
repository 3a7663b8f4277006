"""Avro single-object encoding: round trips, and clear errors for corrupt or foreign bytes."""

from __future__ import annotations

import io

import pytest
from fastavro import parse_schema, schemaless_writer
from hypothesis import given
from hypothesis import strategies as st

from onceflow.core.avro import (
    ACCESS_EVENT_SCHEMA,
    ACCESS_EVENT_SERDE,
    IP_COUNT_SERDE,
    REGISTRY,
    AccessEvent,
    IpCount,
    schema_fingerprint,
)
from onceflow.core.errors import CorruptRecord, SerializationError, UnknownSchema

EVENT: AccessEvent = {
    "event_time": 1_700_000_000_123,
    "ip": "203.0.113.7",
    "method": "GET",
    "path": "/index.html?q=ü",
    "status": 200,
    "bytes": 5120,
    "user_agent": "curl/8.5.0",
}

events: st.SearchStrategy[dict[str, object]] = st.builds(
    dict,
    event_time=st.integers(min_value=0, max_value=2**62),
    ip=st.ip_addresses().map(str),
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    path=st.text(max_size=200),
    status=st.integers(min_value=100, max_value=599),
    bytes=st.integers(min_value=0, max_value=2**40),
    user_agent=st.text(max_size=100),
)


def test_access_event_round_trip() -> None:
    data = ACCESS_EVENT_SERDE.encode(EVENT)
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == ACCESS_EVENT_SERDE.fingerprint
    assert ACCESS_EVENT_SERDE.decode(data) == EVENT


def test_ip_count_round_trip() -> None:
    row: IpCount = {
        "window_start": 1_700_000_000_000,
        "window_end": 1_700_000_005_000,
        "ip": "10.0.0.1",
        "count": 42,
    }
    assert IP_COUNT_SERDE.decode(IP_COUNT_SERDE.encode(row)) == row


@given(events)
def test_any_access_event_round_trips(event: AccessEvent) -> None:
    assert ACCESS_EVENT_SERDE.decode(ACCESS_EVENT_SERDE.encode(event)) == event


def test_fingerprint_is_the_avro_spec_crc64_of_canonical_form() -> None:
    # The fingerprint of the primitive schema "int" from the Avro specification's test vectors.
    assert schema_fingerprint({"type": "int"}) == (0x7275D51A3F395C8F).to_bytes(8, "little")
    assert ACCESS_EVENT_SERDE.fingerprint != IP_COUNT_SERDE.fingerprint
    # logicalType and doc are not part of the canonical form, so they never change the fingerprint.
    plain = {**ACCESS_EVENT_SCHEMA, "doc": "other"}
    assert schema_fingerprint(plain) == ACCESS_EVENT_SERDE.fingerprint


def test_registry_dispatches_on_fingerprint() -> None:
    data = IP_COUNT_SERDE.encode({"window_start": 0, "window_end": 5000, "ip": "a", "count": 1})
    assert REGISTRY.serde_for(data) is IP_COUNT_SERDE
    assert REGISTRY.serde_for(ACCESS_EVENT_SERDE.encode(EVENT)) is ACCESS_EVENT_SERDE


def test_unknown_fingerprint_is_named() -> None:
    data = IP_COUNT_SERDE.encode({"window_start": 0, "window_end": 5000, "ip": "a", "count": 1})
    with pytest.raises(UnknownSchema) as err:
        ACCESS_EVENT_SERDE.decode(data)
    assert IP_COUNT_SERDE.fingerprint.hex() in str(err.value)
    assert "AccessEvent" in str(err.value)
    foreign = b"\xc3\x01" + b"\x01" * 8 + b"\x00"
    with pytest.raises(UnknownSchema, match="0101010101010101"):
        REGISTRY.serde_for(foreign)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty value"),
        (b"\x00\x01garbage!", "expected header"),
        (b'{"ip": "1.2.3.4"}', "expected header"),
    ],
)
def test_bytes_without_header_are_corrupt(data: bytes, message: str) -> None:
    with pytest.raises(CorruptRecord, match=message):
        ACCESS_EVENT_SERDE.decode(data)


def test_truncated_body_is_corrupt() -> None:
    data = ACCESS_EVENT_SERDE.encode(EVENT)
    with pytest.raises(CorruptRecord, match=r"corrupt io\.onceflow\.v1\.AccessEvent"):
        ACCESS_EVENT_SERDE.decode(data[:-8])


def test_trailing_bytes_are_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="trailing bytes"):
        ACCESS_EVENT_SERDE.decode(ACCESS_EVENT_SERDE.encode(EVENT) + b"\x00\x00")


def test_invalid_utf8_is_corrupt() -> None:
    body = io.BytesIO()
    schemaless_writer(body, parse_schema({"type": "long"}), 1)
    data = ACCESS_EVENT_SERDE.encode(EVENT)
    # Replace the ip string's bytes with invalid UTF-8 of the same length.
    ip = EVENT["ip"].encode()
    broken = data.replace(ip, b"\xff" * len(ip), 1)
    with pytest.raises(CorruptRecord, match="UnicodeDecodeError"):
        ACCESS_EVENT_SERDE.decode(broken)


@given(st.binary(max_size=64))
def test_random_bytes_never_decode_silently_wrong(data: bytes) -> None:
    try:
        ACCESS_EVENT_SERDE.decode(ACCESS_EVENT_SERDE.fingerprint.join([b"\xc3\x01", data]))
    except SerializationError:
        return
    # If it decoded, re-encoding must give back exactly the same bytes.
    record = ACCESS_EVENT_SERDE.decode(b"\xc3\x01" + ACCESS_EVENT_SERDE.fingerprint + data)
    assert ACCESS_EVENT_SERDE.encode(record) == b"\xc3\x01" + ACCESS_EVENT_SERDE.fingerprint + data


def test_encoding_a_bad_record_names_the_schema() -> None:
    with pytest.raises(SerializationError, match="AccessEvent"):
        ACCESS_EVENT_SERDE.encode({**EVENT, "status": "OK"})  # type: ignore[typeddict-item]
