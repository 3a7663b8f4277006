"""Settings: a TOML file plus environment overrides; errors name the setting and the problem."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import Field

from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import GrpcServerSettings, KafkaSettings, Section, Settings, check_unique, load_settings


class JobSection(Section):
    name: str = "ipcount"
    window_ms: int = Field(default=5000, gt=0)
    sinks: list[str] = Field(default_factory=lambda: ["kafka", "sqlite"])


class ExampleSettings(Settings):
    env_prefix: ClassVar[str] = "ONCEFLOW_TEST__"
    kafka: KafkaSettings = KafkaSettings()
    server: GrpcServerSettings = GrpcServerSettings()
    job: JobSection = JobSection()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(text)
    return path


def test_defaults_without_file_or_env() -> None:
    settings = load_settings(ExampleSettings, env={})
    assert settings.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert settings.job.window_ms == 5000


def test_file_values_are_typed(tmp_path: Path) -> None:
    path = write(tmp_path, '[kafka]\nbootstrap_servers = "k1:9092,k2:9093"\n[job]\nwindow_ms = 10000\n')
    settings = load_settings(ExampleSettings, path, env={})
    assert settings.kafka.bootstrap_servers == "k1:9092,k2:9093"
    assert settings.job.window_ms == 10000


def test_environment_overrides_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[job]\nwindow_ms = 10000\n")
    env = {
        "ONCEFLOW_TEST__JOB__WINDOW_MS": "2000",
        "ONCEFLOW_TEST__JOB__SINKS": '["postgres"]',
        "ONCEFLOW_TEST__KAFKA__PROPERTIES__SECURITY.PROTOCOL": "SSL",
        "UNRELATED": "x",
    }
    settings = load_settings(ExampleSettings, path, env=env)
    assert settings.job.window_ms == 2000
    assert settings.job.sinks == ["postgres"]
    assert settings.kafka.properties == {"security.protocol": "SSL"}
    assert settings.kafka.client_config()["security.protocol"] == "SSL"


def test_command_line_overrides_apply_last_and_before_validation(tmp_path: Path) -> None:
    path = write(tmp_path, "[job]\nwindow_ms = 0\n")  # invalid alone: the override replaces it first
    env = {"ONCEFLOW_TEST__JOB__WINDOW_MS": "2000"}
    settings = load_settings(ExampleSettings, path, env=env, overrides={"job": {"window_ms": 3000}})
    assert settings.job.window_ms == 3000
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, env={}, overrides={"job": {"window_ms": -1}})
    assert err.value.setting == "job.window_ms"
    assert "from the command line" in str(err.value)


def test_bad_value_in_file_names_setting_and_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[job]\nwindow_ms = "soon"\n')
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, path, env={})
    assert err.value.setting == "job.window_ms"
    assert "soon" in err.value.reason
    assert str(path) in str(err.value)


def test_out_of_range_value_names_constraint(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, write(tmp_path, "[job]\nwindow_ms = 0\n"), env={})
    assert err.value.setting == "job.window_ms"
    assert "greater than 0" in err.value.reason


def test_bad_value_from_environment_names_the_variable() -> None:
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, env={"ONCEFLOW_TEST__SERVER__PORT": "70000"})
    assert err.value.setting == "server.port"
    assert "ONCEFLOW_TEST__SERVER__PORT" in str(err.value)


def test_unknown_key_in_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, write(tmp_path, "[job]\nwindow_msec = 5\n"), env={})
    assert err.value.setting == "job.window_msec"
    assert "unknown setting" in err.value.reason


def test_unknown_environment_variable_is_rejected() -> None:
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, env={"ONCEFLOW_TEST__JOB__WINDOWMS": "5"})
    assert err.value.setting == "ONCEFLOW_TEST__JOB__WINDOWMS"
    assert "window_ms" in err.value.reason  # lists the known settings


def test_bad_bootstrap_servers_explains_expected_format() -> None:
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, env={"ONCEFLOW_TEST__KAFKA__BOOTSTRAP_SERVERS": "localhost"})
    assert err.value.setting == "kafka.bootstrap_servers"
    assert "host:port" in err.value.reason


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="does not exist"):
        load_settings(ExampleSettings, tmp_path / "nope.toml", env={})
    with pytest.raises(InvalidConfig, match="not valid TOML"):
        load_settings(ExampleSettings, write(tmp_path, "[job\nwindow_ms = 1"), env={})


def test_settings_are_immutable() -> None:
    settings = load_settings(ExampleSettings, env={})
    with pytest.raises(Exception, match="frozen"):
        settings.job.window_ms = 1


def test_kafka_properties_file_is_merged_over_properties(tmp_path: Path) -> None:
    secret = tmp_path / "kafka.properties"
    secret.write_text("# the coordinator's login\nsasl.username = coordinator\n\nsasl.password=s3cr=t\n")
    config = write(
        tmp_path,
        f'[kafka]\nproperties_file = "{secret}"\n[kafka.properties]\n"security.protocol" = "SASL_PLAINTEXT"\n'
        '"sasl.username" = "overridden"\n',
    )
    kafka = load_settings(ExampleSettings, config, env={}).kafka
    assert kafka.client_config()["sasl.password"] == "s3cr=t"
    assert kafka.properties == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.username": "coordinator",
        "sasl.password": "s3cr=t",
    }


def test_missing_or_malformed_kafka_properties_file_names_the_setting(tmp_path: Path) -> None:
    env = {"ONCEFLOW_TEST__KAFKA__PROPERTIES_FILE": str(tmp_path / "missing.properties")}
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, env=env)
    assert err.value.setting == "kafka.properties_file"
    assert "cannot read" in err.value.reason and "missing.properties" in err.value.reason
    bad = tmp_path / "bad.properties"
    bad.write_text("sasl.password hunter2\n")
    with pytest.raises(InvalidConfig) as err:
        load_settings(ExampleSettings, env={"ONCEFLOW_TEST__KAFKA__PROPERTIES_FILE": str(bad)})
    assert "line 1: expected name=value" in err.value.reason and "hunter2" not in str(err.value)
    bad.write_text("bootstrap.servers=elsewhere:9092\n")
    with pytest.raises(InvalidConfig, match="set bootstrap_servers"):
        load_settings(ExampleSettings, env={"ONCEFLOW_TEST__KAFKA__PROPERTIES_FILE": str(bad)})


def test_check_unique_names_every_repeated_name_once() -> None:
    check_unique(["a", "b"], "sink names must be unique")
    with pytest.raises(ValueError, match=r"^sink names must be unique; repeated: a, c$"):
        check_unique(["c", "a", "b", "a", "c", "c"], "sink names must be unique")
