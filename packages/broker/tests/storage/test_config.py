"""LogConfig: Kafka topic config names, defaults and validation."""

from __future__ import annotations

import pytest

from onceflow.broker.storage import InvalidTopicConfig, LogConfig


def test_defaults_match_kafka() -> None:
    configs = LogConfig().to_topic_configs()
    assert configs["segment.bytes"] == str(1 << 30)
    assert configs["retention.ms"] == "604800000"
    assert configs["cleanup.policy"] == "delete"
    assert configs["max.message.bytes"] == "1048588"
    assert configs["message.timestamp.type"] == "CreateTime"


def test_topic_configs_overlay_defaults_and_round_trip() -> None:
    config = LogConfig.from_topic_configs(
        {
            "cleanup.policy": "compact,delete",
            "retention.ms": "-1",
            "segment.bytes": "1048576",
            "message.timestamp.type": "LogAppendTime",
            "flush.messages": "1",
            "min.insync.replicas": "1",
        },
        LogConfig(),
    )
    assert config.cleanup_policy == frozenset({"compact", "delete"})
    assert (config.retention_ms, config.segment_bytes, config.fsync) == (-1, 1048576, "always")
    assert config.log_append_time
    assert LogConfig.from_topic_configs(config.to_topic_configs(), LogConfig()) == config


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("retention.ms", "soon"),
        ("retention.ms", "-2"),
        ("cleanup.policy", "archive"),
        ("message.timestamp.type", "Wallclock"),
        ("segment.bytes", "3"),
        ("no.such.config", "1"),
    ],
)
def test_bad_configs_name_the_setting(name: str, value: str) -> None:
    with pytest.raises(InvalidTopicConfig) as info:
        LogConfig.from_topic_configs({name: value}, LogConfig())
    assert info.value.name == name
