"""Per-topic log configuration, with Kafka's topic config names and defaults."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from onceflow.broker.storage.errors import InvalidTopicConfig

DAY_MS = 86_400_000
LONG_MAX = 9_223_372_036_854_775_807
INT_MAX = 2_147_483_647
CLEANUP_POLICIES = frozenset({"delete", "compact"})
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# Kafka topic configs that clients and frameworks send but this single-node broker does not enforce.
# They are accepted, kept verbatim and reported back by DescribeConfigs.
ACCEPTED_UNENFORCED = frozenset(
    {
        "compression.type",
        "file.delete.delay.ms",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "min.cleanable.dirty.ratio",
        "min.insync.replicas",
        "preallocate",
        "remote.storage.enable",
        "segment.index.bytes",
        "segment.jitter.ms",
        "unclean.leader.election.enable",
    }
)


@dataclass(frozen=True)
class LogConfig:
    """Configuration of one partition log. Times are in ms; -1 means unlimited where Kafka allows it.

    ``fsync="always"`` fsyncs every append before it is acknowledged (Kafka ``flush.messages=1``);
    ``"interval"`` leaves fsync to :meth:`PartitionLog.flush`, which the broker calls periodically. Either
    way an acknowledged append is in the page cache and survives ``kill -9`` of the broker.
    ``producer_id_expiration_ms`` is the broker-wide ``producer.id.expiration.ms``, not a topic config.
    """

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * DAY_MS
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    max_message_bytes: int = 1_048_588
    index_interval_bytes: int = 4096
    message_timestamp_type: str = "CreateTime"
    min_compaction_lag_ms: int = 0
    delete_retention_ms: int = DAY_MS
    fsync: Literal["always", "interval"] = "interval"
    producer_id_expiration_ms: int = DAY_MS
    unenforced: tuple[tuple[str, str], ...] = field(default=())

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_topic_configs(cls, configs: Mapping[str, str], defaults: LogConfig) -> LogConfig:
        """Overlay Kafka-named topic configs on ``defaults``.

        Raises InvalidTopicConfig naming the config for an unknown name or a value of the wrong type
        or range. Names Kafka knows but this broker does not enforce are kept verbatim.
        """
        changes: dict[str, Any] = {}
        unenforced = dict(defaults.unenforced)
        for name, raw in configs.items():
            parser = _PARSERS.get(name)
            if parser is not None:
                attribute, parse = parser
                changes[attribute] = parse(name, raw)
            elif name in ACCEPTED_UNENFORCED:
                unenforced[name] = raw
            else:
                raise InvalidTopicConfig(name, "unknown topic config")
        changes["unenforced"] = tuple(sorted(unenforced.items()))
        return replace(defaults, **changes)

    def to_topic_configs(self) -> dict[str, str]:
        """The effective values under their Kafka names (for DescribeConfigs)."""
        result = {
            "segment.bytes": str(self.segment_bytes),
            "segment.ms": str(self.segment_ms),
            "retention.ms": str(self.retention_ms),
            "retention.bytes": str(self.retention_bytes),
            "cleanup.policy": ",".join(sorted(self.cleanup_policy)),
            "max.message.bytes": str(self.max_message_bytes),
            "index.interval.bytes": str(self.index_interval_bytes),
            "message.timestamp.type": self.message_timestamp_type,
            "min.compaction.lag.ms": str(self.min_compaction_lag_ms),
            "delete.retention.ms": str(self.delete_retention_ms),
            "flush.messages": "1" if self.fsync == "always" else str(LONG_MAX),
        }
        result.update(self.unenforced)
        return result


def _integer(minimum: int, maximum: int = LONG_MAX) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise InvalidTopicConfig(name, f"{raw!r} is not an integer") from None
        if not minimum <= value <= maximum:
            raise InvalidTopicConfig(name, f"{value} is outside [{minimum}, {maximum}]")
        return value

    return parse


def _cleanup_policy(name: str, raw: str) -> frozenset[str]:
    policies = frozenset(part.strip() for part in raw.split(",") if part.strip())
    if not policies or not policies <= CLEANUP_POLICIES:
        raise InvalidTopicConfig(name, f"{raw!r} must be 'delete', 'compact' or both")
    return policies


def _timestamp_type(name: str, raw: str) -> str:
    if raw not in TIMESTAMP_TYPES:
        raise InvalidTopicConfig(name, f"{raw!r} must be one of {', '.join(TIMESTAMP_TYPES)}")
    return raw


def _flush_messages(name: str, raw: str) -> str:
    return "always" if _integer(1)(name, raw) == 1 else "interval"


_PARSERS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "segment.bytes": ("segment_bytes", _integer(14, INT_MAX)),
    "segment.ms": ("segment_ms", _integer(1)),
    "retention.ms": ("retention_ms", _integer(-1)),
    "retention.bytes": ("retention_bytes", _integer(-1)),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "max.message.bytes": ("max_message_bytes", _integer(0, INT_MAX)),
    "index.interval.bytes": ("index_interval_bytes", _integer(0, INT_MAX)),
    "message.timestamp.type": ("message_timestamp_type", _timestamp_type),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _integer(0)),
    "delete.retention.ms": ("delete_retention_ms", _integer(0)),
    "flush.messages": ("fsync", _flush_messages),
}
