"""Topics onceflow creates: replication min(3, brokers) by default, min ISR 2 from 3 replicas on, and a
bad setting is an InvalidConfig naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.errors import InvalidConfig
from onceflow.core.kafka import Replication, TopicSpec, ensure_topics
from onceflow.core.settings import KafkaSettings, Settings, load_settings
from onceflow.testing.broker.apache_kafka import ApacheKafka


class KafkaOnly(Settings):
    kafka: KafkaSettings = KafkaSettings()


@pytest.mark.parametrize(
    ("replication", "brokers", "expected"),
    [
        (Replication(), 1, (1, 1)),
        (Replication(), 2, (2, 1)),
        (Replication(), 3, (3, 2)),
        (Replication(), 7, (3, 2)),
        (Replication(2), 3, (2, 1)),
        (Replication(5, 3), 6, (5, 3)),
    ],
)
def test_the_default_is_min_3_brokers_with_min_isr_2_from_3_replicas_on(
    replication: Replication, brokers: int, expected: tuple[int, int]
) -> None:
    assert replication.resolve(brokers) == expected


def test_more_replicas_than_brokers_names_the_setting() -> None:
    with pytest.raises(InvalidConfig, match=r"'kafka.replication_factor'.*4 is more than the 3 broker") as info:
        Replication(4).resolve(3)
    assert info.value.setting == "kafka.replication_factor"


def test_a_min_isr_above_the_replication_factor_names_its_setting() -> None:
    with pytest.raises(InvalidConfig) as info:
        Replication(2, 3).resolve(3)
    assert info.value.setting == "kafka.min_insync_replicas"
    assert "between 1 and the replication factor 2, got 3" in info.value.reason


@pytest.mark.parametrize("value", ["0", "-1"])
@pytest.mark.parametrize("setting", ["replication_factor", "min_insync_replicas"])
def test_zero_or_negative_is_refused_when_the_settings_load(setting: str, value: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        load_settings(KafkaOnly, env={f"ONCEFLOW__KAFKA__{setting.upper()}": value})
    assert info.value.setting == f"kafka.{setting}"
    assert "greater than or equal to 1" in info.value.reason


def test_settings_carry_the_replication(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text("[kafka]\nreplication_factor = 3\nmin_insync_replicas = 2\n")
    assert Replication.of(load_settings(KafkaOnly, path, env={}).kafka) == Replication(3, 2)


def _configs(admin: AdminClient, topic: str) -> dict[str, str | None]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return {k: v.value for k, v in admin.describe_configs([resource])[resource].result(10).items()}


def test_on_one_broker_topics_get_one_replica_and_an_impossible_factor_is_refused(broker: EmbeddedBroker) -> None:
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": broker.bootstrap_servers}
    spec = TopicSpec("_onceflow_example", 2, {"cleanup.policy": "compact"})
    assert ensure_topics(config, [spec]) == ["_onceflow_example"]
    admin = AdminClient(config)
    described = admin.list_topics("_onceflow_example", timeout=10).topics["_onceflow_example"]
    assert sorted(described.partitions) == [0, 1]
    assert {len(p.replicas) for p in described.partitions.values()} == {1}
    assert _configs(admin, "_onceflow_example")["cleanup.policy"] == "compact"
    # an existing topic is left as it is, whatever is asked
    assert ensure_topics(config, [spec], replication=Replication(3)) == []
    with pytest.raises(InvalidConfig, match=r"3 is more than the 1 broker"):
        ensure_topics(config, [TopicSpec("_onceflow_other")], replication=Replication(3))
    assert "_onceflow_other" not in admin.list_topics(timeout=10).topics


def test_a_created_topic_is_served_as_soon_as_ensure_topics_returns(apache_kafka: ApacheKafka) -> None:
    """Apache Kafka answers CreateTopics once its controller committed the topic; its broker learns of
    it a moment later. ensure_topics returns only once the topic is served, so a DescribeConfigs made at
    once (not retried here) finds it: a coordinator checks its new log topic's configuration this way."""
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": apache_kafka.bootstrap_servers}
    admin = AdminClient(config)
    for n in range(10):
        name = f"_onceflow_served_{n}"
        assert ensure_topics(config, [TopicSpec(name, 3, {"cleanup.policy": "compact"})]) == [name]
        assert _configs(admin, name)["cleanup.policy"] == "compact"
        described = admin.list_topics(timeout=10).topics[name]
        assert described.error is None
        assert all(p.leader >= 0 for p in described.partitions.values())
