"""The Kafka-backed stores' log: a write the broker refuses is an error naming the topic and the key,
never a write that silently vanishes (the next read would then miss it)."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from confluent_kafka import KafkaError, KafkaException

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract.clients import ConnectClient, RpcFailed
from onceflow.runtime.service import ConnectWorkerService
from onceflow.runtime.storage import KafkaBasedLog
from onceflow.testing.broker.clients import create_topic

#: Test topics take record batches of at most this many bytes; a larger write is refused by the broker.
SMALL_TOPIC = {"cleanup.policy": "compact", "max.message.bytes": "1024"}


def test_a_refused_write_raises_naming_the_topic_and_the_key(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "small-log", config=SMALL_TOPIC)
    handled: list[bytes | None] = []
    log = KafkaBasedLog({"bootstrap.servers": bootstrap}, "small-log", lambda key, _: handled.append(key))
    log.start()
    try:
        log.send(b"small", b"x")
        with pytest.raises(KafkaException) as refused:
            log.send(b"big", b"x" * 4096)
        assert refused.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
        assert "small-log" in str(refused.value) and "'big'" in str(refused.value)
        # A best-effort write (flush=False, as task statuses are) that is refused is logged, not raised.
        log.send(b"big-status", b"x" * 4096, flush=False)
        log.flush()
        log.send(b"after", b"y")
        log.read_to_end()
        assert handled == [b"small", b"after"]
    finally:
        log.stop()


def test_a_connector_config_larger_than_the_configs_topic_takes_is_invalid_not_lost(
    broker: EmbeddedBroker, service_factory: Callable[..., ConnectWorkerService]
) -> None:
    """Create answers INVALID_ARGUMENT naming the record's size and the topic (the broker's refusal,
    or librdkafka's for a record over its message.max.bytes), not NOT_FOUND from a read-back of a
    write that never landed; the worker serves on and takes a config that fits."""
    create_topic(broker.bootstrap_servers, "small-configs", config=SMALL_TOPIC)
    service = service_factory(mode="distributed", topics={"configs": "small-configs"})
    fits = {"connector.class": "counter", "topic": "counted"}
    with ConnectClient(f"127.0.0.1:{service.port}") as client:
        for size in (4096, 2_000_000):  # the broker refuses the first, the worker's client the second
            with pytest.raises(RpcFailed) as refused:
                client.create_connector("big", {**fits, "note": "x" * size})
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = refused.value.details()
            assert "small-configs" in details and "'config'" in details and "bytes" in details, details
        assert "big" not in client.list_connectors().names
        client.create_connector("fits", fits)
        assert "fits" in client.list_connectors().names
