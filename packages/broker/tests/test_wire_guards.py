"""The broker's protocol edge, probed with hand-crafted frames over a raw socket."""

# Raw kio requests take plain ints/strs/bytes where kio declares NewType wrappers (i8, TopicName) or
# parsed Records; the broker reads them off the wire the same way, so the wrappers add nothing here.
# mypy: disable-error-code="arg-type"

from __future__ import annotations

import datetime
import struct
import time
from typing import Any

from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig
from kio.schema.describe_configs.v4 import DescribeConfigsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsResource
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import i16, i32, i32Timedelta

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.broker.protocol.versions import SUPPORTED_VERSIONS
from onceflow.broker.storage.batch import SimpleRecord, build_batch
from onceflow.testing.broker.wire import WireClient


def _api_versions_v127_frame(correlation_id: int) -> bytes:
    header = struct.pack(">hhih", 18, 127, correlation_id, 4) + b"test"
    return header + b"\x00" + b"\x05hello\x021\x00"


def _metadata_ok(bootstrap: str) -> bool:
    with WireClient(bootstrap) as client:
        response = client.request(MetadataRequest(topics=None, include_topic_authorized_operations=False))
        return len(response.brokers) == 1


def _create_topic(client: WireClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> Any:
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=name,
                num_partitions=i32(partitions),
                replication_factor=i16(1),
                assignments=(),
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
    )
    return client.request(request).topics[0]


def _produce(client: WireClient, topic: str, records: bytes) -> Any:
    request = ProduceRequest(
        acks=i16(-1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        topic_data=(
            TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=i32(0), records=records),)),
        ),
    )
    return client.request(request).responses[0].partition_responses[0]


def _batch(*values: bytes) -> bytes:
    return build_batch([SimpleRecord(key=None, value=v) for v in values], timestamp_ms=int(time.time() * 1000))


def test_api_versions_of_unknown_version_answers_v0_with_supported_ranges(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        client.send_frame(_api_versions_v127_frame(correlation_id=42))
        frame = client.read_frame()
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame, 0)
    assert correlation_id == 42
    assert error_code == ErrorCode.unsupported_version
    ranges = {key: (low, high) for key, low, high in struct.iter_unpack(">hhh", frame[10 : 10 + 6 * count])}
    assert ranges == SUPPORTED_VERSIONS


def test_api_versions_v3_lists_every_supported_api(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        response = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert response.error_code == ErrorCode.none
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == SUPPORTED_VERSIONS


def test_unknown_api_key_closes_only_that_connection(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as bystander, WireClient(broker.bootstrap_servers) as bad:
        bad.send_frame(struct.pack(">hhih", 999, 0, 1, -1))
        assert bad.is_closed_by_peer()
        assert bystander.request(MetadataRequest(topics=None, include_topic_authorized_operations=False)).brokers
    assert "unsupported request api_key=999" in broker.log_tail()


def test_unsupported_version_of_known_api_closes_the_connection(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as bad:
        bad.send_frame(struct.pack(">hhih", 3, 99, 1, -1))
        assert bad.is_closed_by_peer()
    assert _metadata_ok(broker.bootstrap_servers)


def test_garbage_bytes_close_only_that_connection(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as bystander, WireClient(broker.bootstrap_servers) as bad:
        bad.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert bad.is_closed_by_peer()
        assert bystander.request(MetadataRequest(topics=None, include_topic_authorized_operations=False)).brokers
    assert "invalid frame size" in broker.log_tail()


def test_oversized_frame_closes_the_connection_before_reading_it(broker_factory) -> None:  # type: ignore[no-untyped-def]
    small = broker_factory(socket_request_max_bytes=1024)
    with WireClient(small.bootstrap_servers) as bad:
        bad.send_raw(struct.pack(">i", 2048) + b"\x00" * 100)
        assert bad.is_closed_by_peer()
    with WireClient(small.bootstrap_servers) as bad:
        bad.send_raw(struct.pack(">i", 200 * 1024 * 1024))
        assert bad.is_closed_by_peer()
    assert _metadata_ok(small.bootstrap_servers)
    assert "socket.request.max.bytes" in small.log_tail()


def test_truncated_body_closes_the_connection(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as bad:
        frame = bad.encode(MetadataRequest(topics=None, include_topic_authorized_operations=False))
        bad.send_frame(frame[:9])
        assert bad.is_closed_by_peer()
    assert "malformed request" in broker.log_tail()
    assert _metadata_ok(broker.bootstrap_servers)


def test_corrupt_crc_is_rejected_with_corrupt_message(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        assert _create_topic(client, "crc").error_code == ErrorCode.none
        good = _produce(client, "crc", _batch(b"a", b"b"))
        assert good.error_code == ErrorCode.none and good.base_offset == 0
        corrupt = bytearray(_batch(b"c"))
        corrupt[-1] ^= 0xFF
        bad = _produce(client, "crc", bytes(corrupt))
        assert bad.error_code == ErrorCode.corrupt_message
        after = _produce(client, "crc", _batch(b"d"))
        assert after.error_code == ErrorCode.none and after.base_offset == 2


def test_oversize_batch_is_rejected_with_message_too_large(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        _create_topic(client, "small", configs={"max.message.bytes": "200"})
        response = _produce(client, "small", _batch(b"x" * 1000))
        assert response.error_code == ErrorCode.message_too_large


def test_produce_to_unknown_topic_without_auto_create(broker_factory) -> None:  # type: ignore[no-untyped-def]
    instance = broker_factory(auto_create_topics=False)
    with WireClient(instance.bootstrap_servers) as client:
        assert _produce(client, "nope", _batch(b"a")).error_code == ErrorCode.unknown_topic_or_partition


def test_create_topics_validation(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        bad_config = _create_topic(client, "cfg", configs={"retention.ms": "soon"})
        assert bad_config.error_code == ErrorCode.invalid_config
        assert "retention.ms" in bad_config.error_message
        unknown = _create_topic(client, "cfg", configs={"no.such.config": "1"})
        assert unknown.error_code == ErrorCode.invalid_config and "no.such.config" in unknown.error_message
        assert _create_topic(client, "bad/name").error_code == ErrorCode.invalid_topic_exception
        assert _create_topic(client, "ok", partitions=2).error_code == ErrorCode.none
        assert _create_topic(client, "ok").error_code == ErrorCode.topic_already_exists
        rf3 = client.request(
            CreateTopicsRequest(
                topics=(
                    CreatableTopic(
                        name="rf", num_partitions=i32(1), replication_factor=i16(3), assignments=(), configs=()
                    ),
                ),
            )
        ).topics[0]
        assert rf3.error_code == ErrorCode.invalid_replication_factor


def test_describe_configs_returns_real_values(broker_factory) -> None:  # type: ignore[no-untyped-def]
    instance = broker_factory(log_retention_ms=123456, default_partitions=3)
    with WireClient(instance.bootstrap_servers) as client:
        _create_topic(client, "described", configs={"cleanup.policy": "compact", "retention.ms": "1000"})
        response = client.request(
            DescribeConfigsRequest(
                resources=(
                    DescribeConfigsResource(resource_type=2, resource_name="described", configuration_keys=None),
                    DescribeConfigsResource(resource_type=4, resource_name="0", configuration_keys=None),
                    DescribeConfigsResource(resource_type=2, resource_name="missing", configuration_keys=None),
                )
            )
        )
    topic, broker_result, missing = response.results
    topic_configs = {c.name: c for c in topic.configs}
    assert topic_configs["cleanup.policy"].value == "compact"
    assert topic_configs["retention.ms"].value == "1000"
    assert topic_configs["retention.ms"].config_source == 1
    assert topic_configs["segment.bytes"].config_source == 5
    broker_configs = {c.name: c.value for c in broker_result.configs}
    assert broker_configs["log.retention.ms"] == "123456"
    assert broker_configs["num.partitions"] == "3"
    assert broker_configs["auto.create.topics.enable"] == "true"
    assert broker_configs["transaction.max.timeout.ms"] == "900000"
    assert broker_configs["offsets.topic.replication.factor"] == "1"
    assert broker_configs["min.insync.replicas"] == "1"
    assert missing.error_code == ErrorCode.unknown_topic_or_partition


def test_long_poll_fetch_is_woken_by_produce_and_responses_stay_ordered(broker: EmbeddedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client, WireClient(broker.bootstrap_servers) as producer:
        _create_topic(client, "poll")
        fetch = FetchRequest(
            max_wait=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            min_bytes=i32(1),
            topics=(
                FetchTopic(
                    topic="poll",
                    partitions=(FetchPartition(partition=i32(0), fetch_offset=0, partition_max_bytes=i32(1 << 20)),),
                ),
            ),
            forgotten_topics_data=(),
        )
        metadata = MetadataRequest(topics=None, include_topic_authorized_operations=False)
        client.send_frame(client.encode(fetch, correlation_id=100))
        client.send_frame(client.encode(metadata, correlation_id=101))
        time.sleep(0.3)
        started = time.monotonic()
        assert _produce(producer, "poll", _batch(b"wake")).error_code == ErrorCode.none
        from kio.schema.fetch.v12 import FetchResponse
        from kio.schema.metadata.v12 import MetadataResponse

        from onceflow.testing.broker.wire import decode_response

        first_id, fetched = decode_response(FetchResponse, client.read_frame())
        second_id, _ = decode_response(MetadataResponse, client.read_frame())
        assert time.monotonic() - started < 5
    assert (first_id, second_id) == (100, 101)
    records = fetched.responses[0].partitions[0].records
    assert records and b"wake" in records
