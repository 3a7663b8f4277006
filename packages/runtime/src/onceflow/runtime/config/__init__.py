"""Declared configuration: connector configs checked against a :class:`ConfigDef`, worker settings."""

from onceflow.core.config_def import ConfigDef, ConfigKey, ConfigType, ConfigValidation, ParsedConfig
from onceflow.runtime.config.connector_config import (
    CONNECTOR_CLASS,
    NAME,
    TASKS_MAX,
    TRANSACTION_BOUNDARY,
    TRANSACTION_BOUNDARY_INTERVAL_MS,
    common_config_def,
    sink_config_def,
    source_config_def,
)
from onceflow.runtime.config.files import load_connector_file

__all__ = [
    "CONNECTOR_CLASS",
    "NAME",
    "TASKS_MAX",
    "TRANSACTION_BOUNDARY",
    "TRANSACTION_BOUNDARY_INTERVAL_MS",
    "ConfigDef",
    "ConfigKey",
    "ConfigType",
    "ConfigValidation",
    "ParsedConfig",
    "common_config_def",
    "load_connector_file",
    "sink_config_def",
    "source_config_def",
]
