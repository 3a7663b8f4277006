"""Config entries as DescribeConfigs and CreateTopics report them: name, value, source, type.

Guarantees: topic entries are the effective values from the topic's LogConfig (explicit ones marked
DYNAMIC_TOPIC_CONFIG, inherited ones DEFAULT_CONFIG); broker entries carry the values this broker really
runs with, under Kafka's names, marked read-only (they cannot be altered at runtime).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker
    from onceflow.broker.topics import Topic

# Kafka ConfigSource values.
DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# Kafka ConfigType values (DescribeConfigs v3+).
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7

_TOPIC_TYPES = {
    "cleanup.policy": LIST,
    "message.timestamp.type": STRING,
    "compression.type": STRING,
    "max.message.bytes": INT,
    "index.interval.bytes": INT,
    "segment.bytes": INT,
    "min.insync.replicas": INT,
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One reported config."""

    name: str
    value: str
    source: int
    config_type: int
    read_only: bool = False

    def describe(self) -> dict[str, object]:
        """As a DescribeConfigs/CreateTopics result entry."""
        return {
            "name": self.name,
            "value": self.value,
            "read_only": self.read_only,
            "config_source": self.source,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": self.config_type,
            "documentation": None,
        }


def topic_entries(explicit: Mapping[str, str], effective: Mapping[str, str]) -> list[ConfigEntry]:
    """Entries of a topic: its effective configs, sourced by whether the topic set them."""
    return [
        ConfigEntry(
            name=name,
            value=value,
            source=DYNAMIC_TOPIC_CONFIG if name in explicit else DEFAULT_CONFIG,
            config_type=_TOPIC_TYPES.get(name, LONG),
        )
        for name, value in sorted(effective.items())
    ]


def entries_of_topic(topic: Topic) -> list[ConfigEntry]:
    """Entries of a registered topic."""
    return topic_entries(topic.spec.configs, topic.log_config.to_topic_configs())


def broker_entries(broker: Broker) -> list[ConfigEntry]:
    """Entries of this broker (resource name = node id)."""
    config = broker.config
    host, port = broker.advertised

    def static(name: str, value: object, kind: int) -> ConfigEntry:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        return ConfigEntry(name, text, STATIC_BROKER_CONFIG, kind, read_only=True)

    def fixed(name: str, value: str, kind: int) -> ConfigEntry:
        return ConfigEntry(name, value, DEFAULT_CONFIG, kind, read_only=True)

    return [
        static("broker.id", broker.node_id, INT),
        static("node.id", broker.node_id, INT),
        static("advertised.listeners", f"PLAINTEXT://{host}:{port}", LIST),
        static("listeners", f"PLAINTEXT://{config.listen_host}:{broker.port}", LIST),
        static("log.dirs", config.data_dir, STRING),
        static("log.retention.ms", config.log_retention_ms, LONG),
        static("log.retention.bytes", config.log_retention_bytes, LONG),
        static("log.segment.bytes", config.log_segment_bytes, INT),
        static("log.flush.interval.messages", 1 if config.fsync == "always" else 2**63 - 1, LONG),
        static("log.flush.interval.ms", config.fsync_interval_ms, LONG),
        static("num.partitions", config.default_partitions, INT),
        static("auto.create.topics.enable", config.auto_create_topics, BOOLEAN),
        static("message.max.bytes", config.message_max_bytes, INT),
        static("socket.request.max.bytes", config.socket_request_max_bytes, INT),
        static("queued.max.request.bytes", config.queued_max_request_bytes, INT),
        static("connections.max.idle.ms", config.connections_max_idle_ms, LONG),
        static("max.connections.per.ip", config.max_connections_per_ip, INT),
        static("group.initial.rebalance.delay.ms", config.group_initial_rebalance_delay_ms, INT),
        static("transaction.max.timeout.ms", config.transaction_max_timeout_ms, INT),
        static(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            config.transaction_abort_timed_out_interval_ms,
            INT,
        ),
        fixed("log.cleanup.policy", "delete", LIST),
        fixed("default.replication.factor", "1", INT),
        fixed("min.insync.replicas", "1", INT),
        fixed("offsets.topic.replication.factor", "1", SHORT),
        fixed("offsets.topic.num.partitions", "1", INT),
        fixed("offsets.retention.minutes", "10080", INT),
        fixed("transaction.state.log.replication.factor", "1", SHORT),
        fixed("transaction.state.log.min.isr", "1", INT),
        fixed("transactional.id.expiration.ms", "604800000", INT),
        fixed("group.min.session.timeout.ms", "6000", INT),
        fixed("group.max.session.timeout.ms", "1800000", INT),
        fixed("delete.topic.enable", "true", BOOLEAN),
        fixed("compression.type", "producer", STRING),
        fixed("unclean.leader.election.enable", "false", BOOLEAN),
    ]
