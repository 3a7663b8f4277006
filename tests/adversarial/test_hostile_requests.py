"""Hostile request content gets answers, not dropped connections or forged log lines (issue 14).

- A null array where the schema has none (length -1) is read as an empty array: the broker answers
  and the connection stays usable. Where the schema allows null (Metadata ``topics``) it keeps its
  Kafka meaning: all topics.
- Newlines and control characters in ``client_id`` and ``group_id`` are escaped in every log line,
  so a client cannot forge broker log lines.
"""

# Raw kio requests take plain strs where kio declares NewType wrappers (GroupId); the broker reads
# them off the wire the same way, so the wrappers add nothing here.
# mypy: disable-error-code="arg-type"

from __future__ import annotations

import datetime
import struct
from collections.abc import Iterator

import pytest
from kio.index import load_response_schema
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3 import FindCoordinatorRequest
from kio.schema.join_group.v5 import JoinGroupRequest
from kio.static.primitive import i8, i32Timedelta

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.broker.wire import WireClient, decode_response

NULL_ARRAY = struct.pack(">i", -1)


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


NULL_STRING = struct.pack(">h", -1)

# (api key, version, body after the request header) of non-flexible versions with a null array.
NULL_ARRAY_REQUESTS = {
    "produce-v7": (0, 7, NULL_STRING + struct.pack(">hi", -1, 1000) + NULL_ARRAY),
    "fetch-v10": (1, 10, struct.pack(">iiiibii", -1, 100, 1, 1 << 20, 0, 0, -1) + NULL_ARRAY + NULL_ARRAY),
    "list-offsets-v4": (2, 4, struct.pack(">ib", -1, 0) + NULL_ARRAY),
    "offset-commit-v7": (8, 7, _string("g") + struct.pack(">i", -1) + _string("") + NULL_STRING + NULL_ARRAY),
    "describe-groups-v4": (15, 4, NULL_ARRAY + b"\x00"),
    "join-group-v5": (
        11,
        5,
        _string("g") + struct.pack(">ii", 10000, 10000) + _string("") + NULL_STRING + _string("consumer") + NULL_ARRAY,
    ),
    "sync-group-v3": (14, 3, _string("g") + struct.pack(">i", 1) + _string("m") + NULL_STRING + NULL_ARRAY),
    "create-topics-v4": (19, 4, NULL_ARRAY + struct.pack(">ib", 1000, 0)),
    "delete-topics-v3": (20, 3, NULL_ARRAY + struct.pack(">i", 1000)),
    "add-partitions-to-txn-v1": (24, 1, _string("t") + struct.pack(">qh", 1, 0) + NULL_ARRAY),
    "txn-offset-commit-v2": (28, 2, _string("t") + _string("g") + struct.pack(">qh", 1, 0) + NULL_ARRAY),
    "describe-configs-v2": (32, 2, NULL_ARRAY + b"\x00"),
    "offset-fetch-v5": (9, 5, _string("g") + NULL_ARRAY),
    "metadata-v4": (3, 4, NULL_ARRAY + b"\x00"),
    # Flexible version: header tagged fields, then a compact array of length 0 (null).
    "create-topics-v5": (19, 5, b"\x00" + b"\x00" + struct.pack(">ib", 1000, 0) + b"\x00"),
}


def _frame(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    return struct.pack(">hhi", api_key, version, correlation_id) + _string("hostile") + body


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """One broker for the null-array probes (each leaves it as it found it), with one topic."""
    with EmbeddedBroker(tmp_path_factory.mktemp("broker")) as instance:
        create_topic(instance.bootstrap_servers, "present")
        yield instance


@pytest.mark.parametrize("name", list(NULL_ARRAY_REQUESTS))
def test_a_null_array_gets_an_answer_and_the_connection_stays_open(shared_broker: EmbeddedBroker, name: str) -> None:
    broker = shared_broker
    api_key, version, body = NULL_ARRAY_REQUESTS[name]
    with WireClient(broker.bootstrap_servers) as client:
        client.send_frame(_frame(api_key, version, 4242, body))
        correlation_id, response = decode_response(load_response_schema(api_key, version), client.read_frame())
        assert correlation_id == 4242
        if name == "metadata-v4":  # null topics: every topic (Kafka's documented meaning)
            assert [t.name for t in response.topics] == ["present"]
        after = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert after.error_code is ErrorCode.none


FORGED = "x\n2099-01-01T00:00:00.000Z ERROR onceflow.broker forged=true\r\x1b[31m"


def test_control_characters_in_client_and_group_ids_cannot_forge_log_lines(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers, client_id=FORGED) as client:
        client.request(FindCoordinatorRequest(key_type=i8(0), key=FORGED))
        join = JoinGroupRequest(
            group_id=FORGED,
            session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(),
        )
        client.request(join)
        # Unknown group, bad frame after it: both are logged with the ids.
        client.send_raw(struct.pack(">i", -5))
        client.is_closed_by_peer()
    broker.stop()
    log = broker.log_path.read_text(errors="replace")
    assert "forged=true" in log, "the hostile ids were never logged (nothing checked)"
    for line in log.splitlines():
        assert not line.startswith("2099-"), f"forged log line: {line!r}"
        assert "\x1b" not in line and "\r" not in line, f"control character in log line: {line!r}"
