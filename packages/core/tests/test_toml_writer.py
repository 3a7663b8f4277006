"""The TOML writer that every service launcher uses: what it writes reads back as what was given."""

from __future__ import annotations

import tomllib
from pathlib import Path

from onceflow.core.toml_writer import to_toml


def test_service_settings_round_trip() -> None:
    settings = {
        "job": "ipcount",
        "trigger_interval_ms": 5000,
        "kafka": {"bootstrap_servers": "127.0.0.1:1", "properties": {"linger.ms": "5", "enable.idempotence": True}},
        "participants": [{"sink": "kafka", "target": "127.0.0.1:2"}, {"sink": "sqlite", "target": "127.0.0.1:2"}],
        "sinks": [{"name": "s", "options": {"path": 'a "quoted" \\ path', "kafka": {"b": "c"}}}],
        "connectors": ["/x/generator.json"],
        "flag": True,
        "ratio": 1.5,
        "tiny": 1e-05,
        "text": "tab\tnewline\nünïcode",
    }
    assert tomllib.loads(to_toml(settings)) == settings


def test_dotted_keys_stay_one_key_and_none_is_left_out() -> None:
    document = tomllib.loads(to_toml({"properties": {"sasl.mechanisms": "PLAIN"}, "unset": None}))
    assert document == {"properties": {"sasl.mechanisms": "PLAIN"}}


def test_values_outside_toml_types_are_written_as_strings() -> None:
    document = tomllib.loads(to_toml({"p": Path("/tmp/x y"), "xs": (1, "a", False), "t": {"roots": (Path("/r"),)}}))
    assert document == {"p": "/tmp/x y", "xs": [1, "a", False], "t": {"roots": ["/r"]}}
