"""The admin APIs clients and Kafka's tools call besides topics: CreatePartitions, AlterConfigs,
IncrementalAlterConfigs (confluent-kafka's AdminClient), on the embedded broker and Apache Kafka,
and Kafka's internal topic names, which the embedded broker never creates on demand."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions

from onceflow.broker.embedded import BrokerProcess, EmbeddedBroker
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic


def _topic_configs(admin: AdminClient, topic: str) -> dict[str, str]:
    [future] = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)]).values()
    return {name: entry.value for name, entry in future.result(timeout=30).items()}


def _configs_once_applied(admin: AdminClient, topic: str, expected: dict[str, str]) -> dict[str, str]:
    """The topic's configs once ``expected`` shows. In KRaft an alter returns when the controller has
    committed it, and the broker that answers DescribeConfigs applies the record a moment later."""
    deadline = time.monotonic() + 30
    while True:
        configs = _topic_configs(admin, topic)
        if all(configs.get(name) == value for name, value in expected.items()) or time.monotonic() > deadline:
            return configs
        time.sleep(0.1)


def test_create_partitions_grows_a_topic_that_then_takes_writes(any_broker: BrokerProcess, name: str) -> None:
    bootstrap = any_broker.bootstrap_servers
    topic = f"grow-{name}"
    create_topic(bootstrap, topic, partitions=1)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    admin.create_partitions([NewPartitions(topic, 3)], validate_only=True)[topic].result(timeout=30)
    assert len(admin.list_topics(topic, timeout=30).topics[topic].partitions) == 1
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=30)
    deadline = time.monotonic() + 30  # the answering broker applies the controller's record a moment later
    while len(admin.list_topics(topic, timeout=30).topics[topic].partitions) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(admin.list_topics(topic, timeout=30).topics[topic].partitions) == 3
    with pytest.raises(KafkaException) as shrink:
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(timeout=30)
    assert shrink.value.args[0].name() == "INVALID_PARTITIONS"
    with pytest.raises(KafkaException) as unknown:
        admin.create_partitions([NewPartitions(f"missing-{name}", 2)])[f"missing-{name}"].result(timeout=30)
    assert unknown.value.args[0].name() == "UNKNOWN_TOPIC_OR_PART"

    produce_acked(bootstrap, topic, [b"on-2"], partition=2)
    assert [(r.partition, r.value) for r in read_topic(bootstrap, topic, idle_timeout=0.5)] == [(2, b"on-2")]


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_and_incremental_alter_configs(any_broker: BrokerProcess, name: str) -> None:
    bootstrap = any_broker.bootstrap_servers
    topic = f"configs-{name}"
    create_topic(bootstrap, topic, config={"retention.ms": "3600000"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)

    incremental = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    admin.incremental_alter_configs([incremental])[incremental].result(timeout=30)
    configs = _configs_once_applied(admin, topic, {"max.message.bytes": "200000"})
    assert configs["max.message.bytes"] == "200000"
    assert set(configs["cleanup.policy"].split(",")) == {"compact", "delete"}
    assert configs["retention.ms"] == "3600000"

    deleted = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    admin.incremental_alter_configs([deleted])[deleted].result(timeout=30)
    configs = _configs_once_applied(admin, topic, {"retention.ms": "604800000"})
    assert configs["cleanup.policy"] == "delete"
    assert configs["retention.ms"] == "604800000"  # back to the default (7 days)

    # AlterConfigs replaces the whole set: what it does not name returns to its default.
    resource.set_config("retention.ms", "7200000")
    admin.alter_configs([resource])[resource].result(timeout=30)
    configs = _configs_once_applied(admin, topic, {"retention.ms": "7200000"})
    assert configs["retention.ms"] == "7200000"
    assert configs["max.message.bytes"] == "1048588"

    invalid = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "soon"})
    with pytest.raises(KafkaException) as refused:
        admin.alter_configs([invalid])[invalid].result(timeout=30)
    assert refused.value.args[0].name() == "INVALID_CONFIG"
    assert _topic_configs(admin, topic)["retention.ms"] == "7200000"


def test_internal_topic_names_are_never_auto_created(broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "allow.auto.create.topics": True})
    for internal in ("__consumer_offsets", "__transaction_state"):
        answer = admin.list_topics(internal, timeout=30).topics[internal]
        assert answer.error is not None and answer.error.name() == "UNKNOWN_TOPIC_OR_PART"
    assert not {"__consumer_offsets", "__transaction_state"} & set(admin.list_topics(timeout=30).topics)
