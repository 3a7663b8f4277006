"""Typed settings: a TOML file plus environment overrides, validated with errors that name the setting."""

from onceflow.core.settings.base import (
    GrpcAuthSettings,
    GrpcLimitsSettings,
    GrpcServerSettings,
    KafkaSettings,
    LoggingSettings,
    MeteredSettings,
    MetricsSettings,
    Section,
    Settings,
    TlsSettings,
)
from onceflow.core.settings.loader import load_settings
from onceflow.core.settings.pairs import parse_pairs
from onceflow.core.settings.unique import check_unique

__all__ = [
    "GrpcAuthSettings",
    "GrpcLimitsSettings",
    "GrpcServerSettings",
    "KafkaSettings",
    "LoggingSettings",
    "MeteredSettings",
    "MetricsSettings",
    "Section",
    "Settings",
    "TlsSettings",
    "check_unique",
    "load_settings",
    "parse_pairs",
]
