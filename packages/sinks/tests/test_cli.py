"""``onceflow participant`` is registered, and a bad config is an error naming the setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from onceflow.core.settings import load_settings
from onceflow.sinks.server import DeltaSink, IcebergSink, KafkaSink, ParticipantSettings, SqliteSink

REPO = Path(__file__).resolve().parents[3]


def _onceflow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onceflow.cli.app", *args], capture_output=True, text=True, timeout=120
    )


def test_participant_subcommand_is_registered() -> None:
    result = _onceflow("participant", "--help")
    assert result.returncode == 0, result.stderr
    assert "--config" in result.stdout and "--ready-file" in result.stdout


def test_bad_config_names_the_setting(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[[sinks]]\nname = "db"\nkind = "sqlite"\n[sinks.options]\npath = ""\n')
    result = _onceflow("participant", "--config", str(config))
    assert result.returncode == 2
    assert "sinks.0.sqlite.options.path" in result.stderr

    config.write_text('[[sinks]]\nname = "db"\nkind = "oracle"\n[sinks.options]\n')
    result = _onceflow("participant", "--config", str(config))
    assert result.returncode == 2 and "sinks.0" in result.stderr and "kind" in result.stderr

    config.write_text(
        '[[sinks]]\nname = "a"\nkind = "sqlite"\noptions = {path = "x"}\n'
        '[[sinks]]\nname = "a"\nkind = "sqlite"\noptions = {path = "y"}\n'
    )
    result = _onceflow("participant", "--config", str(config))
    assert result.returncode == 2 and "repeated: a" in result.stderr


def test_shipped_default_config_loads() -> None:
    settings = load_settings(ParticipantSettings, REPO / "services" / "participant" / "participant.toml", env={})
    kinds = {type(sink) for sink in settings.sinks}
    # one machine, as it is: no PostgreSQL server is assumed (its sink is there, commented out); the
    # lakehouse sinks keep their tables on local disk (the example jobs' Delta and Iceberg outputs)
    assert kinds == {SqliteSink, KafkaSink, DeltaSink, IcebergSink}
    assert settings.server.port == 7101


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    config = tmp_path / "p.toml"
    config.write_text('[[sinks]]\nname = "db"\nkind = "sqlite"\noptions = {path = "x.db"}\n')
    settings = load_settings(
        ParticipantSettings, config, env={"ONCEFLOW_PARTICIPANT__COORDINATOR__TARGET": "coordinator:7100"}
    )
    assert settings.coordinator.target == "coordinator:7100"
