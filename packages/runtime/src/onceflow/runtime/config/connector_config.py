"""Settings every connector has (name, class, tasks.max) and those of every source connector.

These are read by the runtime; a connector's own :class:`ConfigDef` is merged on top of them.
"""

from __future__ import annotations

from typing import Final

from onceflow.core.config_def import ConfigDef, ConfigType

NAME: Final = "name"
CONNECTOR_CLASS: Final = "connector.class"
TASKS_MAX: Final = "tasks.max"
TRANSACTION_BOUNDARY: Final = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL_MS: Final = "transaction.boundary.interval.ms"
#: Prefix of librdkafka producer properties that override the worker's for one connector.
PRODUCER_OVERRIDE_PREFIX: Final = "producer.override."


def _check_name(value: str) -> str | None:
    if not value or any(c in value for c in "/\\\n\t") or value != value.strip():
        return "must be non-empty, without slashes, tabs, newlines or surrounding spaces"
    return None


def common_config_def() -> ConfigDef:
    """Settings of every connector."""
    return (
        ConfigDef()
        .define(NAME, ConfigType.STRING, "unique connector name", check=_check_name)
        .define(CONNECTOR_CLASS, ConfigType.STRING, "plugin name (entry point) or module:Class of the connector")
        .define(TASKS_MAX, ConfigType.INT, "maximum number of tasks", default=1, min=1, max=1024)
    )


def source_config_def() -> ConfigDef:
    """Settings of every source connector: the exactly-once transaction boundary (KIP-618)."""
    return common_config_def().merge(
        ConfigDef()
        .define(
            TRANSACTION_BOUNDARY,
            ConfigType.STRING,
            "when an exactly-once source task commits: after every non-empty poll, or every interval",
            default="interval",
            choices=("poll", "interval"),
        )
        .define(
            TRANSACTION_BOUNDARY_INTERVAL_MS,
            ConfigType.INT,
            "commit interval of transaction.boundary=interval",
            default=100,
            min=1,
            max=3_600_000,
        )
    )


TOPICS: Final = "topics"


def sink_config_def() -> ConfigDef:
    """Settings of every sink connector: the topics it consumes."""
    return common_config_def().define(TOPICS, ConfigType.LIST, "comma-separated topics to consume")
