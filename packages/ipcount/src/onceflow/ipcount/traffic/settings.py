"""The traffic model's settings, as the generator connector takes them and the audit reads them back."""

from __future__ import annotations

from onceflow.core.config_def import ConfigDef, ConfigType, ParsedConfig
from onceflow.ipcount.traffic.model import TrafficModel


def define_traffic(config: ConfigDef) -> ConfigDef:
    """``config`` with the settings a :class:`TrafficModel` depends on (seed, pools, event times)."""
    return (
        config.define("seed", ConfigType.INT, "seed of the traffic; same seed, same events", default=0)
        .define("ips", ConfigType.INT, "distinct client ips", default=1000, min=1, max=1_000_000)
        .define("paths", ConfigType.INT, "distinct paths", default=200, min=1, max=100_000)
        .define("zipf.exponent", ConfigType.FLOAT, "Zipf exponent of ips and paths", default=1.1, min=0)
        .define("event.time.start.ms", ConfigType.INT, "event time of event 0", default=1_767_225_600_000, min=0)
        .define("event.time.rate", ConfigType.INT, "events per second of event time", default=1000, min=1)
        .define(
            "max.disorder.ms",
            ConfigType.INT,
            "most an event's time may lag the newest one before it (keep below the job's lateness)",
            default=3000,
            min=0,
        )
    )


def traffic_config_def() -> ConfigDef:
    """The traffic model's settings alone (other settings of a connector config are ignored)."""
    return define_traffic(ConfigDef())


def model_from_config(config: ParsedConfig) -> TrafficModel:
    """The model a parsed config (of :func:`define_traffic`'s settings) describes."""
    return TrafficModel(
        seed=config.get_int("seed"),
        ips=config.get_int("ips"),
        paths=config.get_int("paths"),
        zipf_exponent=config.get_float("zipf.exponent"),
        start_ms=config.get_int("event.time.start.ms"),
        event_rate=config.get_int("event.time.rate"),
        max_disorder_ms=config.get_int("max.disorder.ms"),
    )
