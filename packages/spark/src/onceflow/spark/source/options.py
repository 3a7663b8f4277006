"""Options of the ``onceflow-kafka`` streaming source, parsed once and checked with errors naming the option.

Spark hands options over case-insensitively (lower-cased keys). The names follow Spark's own Kafka
source where one exists:

=======================  =====================================================================
``kafka.bootstrap.servers``  required; every other ``kafka.<property>`` goes to librdkafka unchanged
``subscribe`` / ``topic``    the topic to read (one topic)
``startingOffsets``          ``earliest`` (default), ``latest``, or JSON ``{"topic": {"0": 42, "1": -2}}``
                             (-2 = earliest, -1 = latest; unlisted partitions start at earliest)
``maxOffsetsPerTrigger``     at most this many offsets per micro-batch (admission control)
``isolation.level``          ``read_committed`` (default) or ``read_uncommitted``
``failOnDataLoss``           ``true`` (default): offsets that are gone fail the query
``fetchTimeoutMs``           a task fails when its range makes no progress this long (default 120000)
``groupId``                  consumer group that receives committed offsets, for lag monitoring
=======================  =====================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from onceflow.core.errors import InvalidConfig

KAFKA_PREFIX = "kafka."
#: librdkafka properties the source owns; setting them through ``kafka.`` would break its guarantees.
_RESERVED = {"group.id", "enable.auto.commit", "auto.offset.reset", "isolation.level", "enable.partition.eof"}

IsolationLevel = Literal["read_committed", "read_uncommitted"]


@dataclass(frozen=True)
class SourceOptions:
    """The source's validated options. Picklable: it travels to the executors with the reader."""

    topic: str
    bootstrap_servers: str
    kafka_properties: dict[str, str] = field(default_factory=dict)
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    isolation_level: IsolationLevel = "read_committed"
    fail_on_data_loss: bool = True
    fetch_timeout_s: float = 120.0
    group_id: str = ""

    def client_config(self, **overrides: object) -> dict[str, object]:
        """librdkafka configuration: bootstrap servers, the passthrough properties, then ``overrides``."""
        config: dict[str, object] = {"bootstrap.servers": self.bootstrap_servers, **self.kafka_properties}
        config.update(overrides)
        return config

    @property
    def monitoring_group(self) -> str:
        return self.group_id or f"onceflow-spark-{self.topic}"


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfig(name, f"expected true or false, got {raw!r}")
    return value == "true"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidConfig(name, f"expected a positive integer, got {raw!r}") from None
    if value < 1:
        raise InvalidConfig(name, f"must be >= 1, got {value}")
    return value


def parse_source_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate the options given to ``spark.readStream.format("onceflow-kafka")``."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    topics = [lowered[k] for k in ("subscribe", "topic") if lowered.get(k)]
    if not topics:
        raise InvalidConfig("subscribe", "name the topic to read with option 'subscribe' (or 'topic')")
    if len(set(topics)) > 1 or "," in topics[0]:
        raise InvalidConfig("subscribe", f"exactly one topic is supported, got {', '.join(topics)!r}")
    bootstrap = lowered.get("kafka.bootstrap.servers", "")
    if not bootstrap:
        raise InvalidConfig("kafka.bootstrap.servers", "is required")
    passthrough: dict[str, str] = {}
    for key, value in lowered.items():
        if key.startswith(KAFKA_PREFIX) and key != "kafka.bootstrap.servers":
            name = key[len(KAFKA_PREFIX) :]
            if name in _RESERVED:
                raise InvalidConfig(key, "is managed by the source and cannot be set (see the source's options)")
            passthrough[name] = value
    isolation = lowered.get("isolation.level", "read_committed")
    if isolation not in ("read_committed", "read_uncommitted"):
        raise InvalidConfig("isolation.level", f"expected read_committed or read_uncommitted, got {isolation!r}")
    starting = lowered.get("startingoffsets", "earliest").strip()
    if starting.lower() in ("earliest", "latest"):
        starting = starting.lower()
    elif not starting.startswith("{"):
        raise InvalidConfig("startingOffsets", f"expected earliest, latest or a JSON object, got {starting!r}")
    timeout_ms = _positive_int(lowered, "fetchTimeoutMs") or 120_000
    return SourceOptions(
        topic=topics[0],
        bootstrap_servers=bootstrap,
        kafka_properties=passthrough,
        starting_offsets=starting,
        max_offsets_per_trigger=_positive_int(lowered, "maxOffsetsPerTrigger"),
        isolation_level=isolation,  # type: ignore[arg-type]
        fail_on_data_loss=_bool(lowered, "failOnDataLoss", True),
        fetch_timeout_s=timeout_ms / 1000,
        group_id=lowered.get("groupid", ""),
    )
