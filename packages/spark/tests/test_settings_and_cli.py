"""Settings of the job (file + environment, clear errors) and the ``onceflow spark`` command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onceflow.cli.app import build_parser, main
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import load_settings
from onceflow.spark.job.settings import SparkJobSettings

SERVICE_CONFIG = Path(__file__).resolve().parents[3] / "services" / "spark-worker" / "spark-worker.toml"


def test_the_service_default_config_is_valid_and_has_the_lessons_defaults() -> None:
    settings = load_settings(SparkJobSettings, SERVICE_CONFIG, env={})
    assert settings.entrypoint == "onceflow.ipcount.job:job"
    assert settings.params == {"window_ms": 5_000, "lateness_ms": 5_000}
    assert {b.sink for b in settings.outputs["results"]} == {"kafka", "sqlite"}
    assert settings.trigger_interval_ms == 5_000
    assert (settings.restart.attempts, settings.restart.delay_ms) == (3, 10_000)
    assert settings.output_mode == "append"
    assert settings.source.isolation_level == "read_committed"
    # one machine, as it is: no PostgreSQL server assumed (its participant is there, commented out)
    assert {p.sink for p in settings.participants} == {"kafka", "sqlite"}


def test_environment_overrides_and_errors_name_the_setting(tmp_path: Path) -> None:
    env = {"ONCEFLOW_SPARK__SOURCE__MAX_OFFSETS_PER_TRIGGER": "5000", "ONCEFLOW_SPARK__OUTPUT_MODE": "update"}
    settings = load_settings(SparkJobSettings, SERVICE_CONFIG, env=env)
    assert settings.source.max_offsets_per_trigger == 5000
    assert settings.output_mode == "update"
    with pytest.raises(InvalidConfig, match="output_mode"):
        load_settings(SparkJobSettings, SERVICE_CONFIG, env={"ONCEFLOW_SPARK__OUTPUT_MODE": "complete"})
    bare = tmp_path / "bare.toml"
    bare.write_text('job = "ipcount"\n')
    with pytest.raises(InvalidConfig, match="'entrypoint': is required"):
        load_settings(SparkJobSettings, bare, env={})
    bare.write_text('job = "ipcount"\nentrypoint = "my_jobs.counts:job"\n')
    with pytest.raises(InvalidConfig, match=r"'outputs'.*declares where its outputs go.*none declared"):
        load_settings(SparkJobSettings, bare, env={})
    with pytest.raises(InvalidConfig, match="participants"):
        load_settings(SparkJobSettings, bare, env={"ONCEFLOW_SPARK__OUTPUTS": '{"results": [{"sink": "db"}]}'})
    twice = '[{"sink": "db", "target": "127.0.0.1:1"}, {"sink": "db", "target": "127.0.0.1:2"}]'
    with pytest.raises(InvalidConfig, match="sink names must be unique; repeated: db"):
        load_settings(
            SparkJobSettings,
            bare,
            env={"ONCEFLOW_SPARK__PARTICIPANTS": twice, "ONCEFLOW_SPARK__OUTPUTS": '{"results": [{"sink": "db"}]}'},
        )
    baseline = load_settings(SparkJobSettings, bare, env={"ONCEFLOW_SPARK__GUARANTEE": "at-least-once"})
    assert baseline.participants == []
    assert baseline.outputs == {}


def test_onceflow_spark_run_is_registered_and_rejects_a_bad_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    help_text = build_parser().format_help()
    assert "spark" in help_text
    bad = tmp_path / "bad.toml"
    bad.write_text('entrypoint = "my_jobs.counts:job"\nguarantee = "at-least-once"\ntrigger_interval_ms = -1\n')
    assert main(["spark", "run", "--config", str(bad)]) == 2
    assert "trigger_interval_ms" in capsys.readouterr().err


def test_a_sink_served_by_shards_names_their_targets_in_order(tmp_path: Path) -> None:
    config = tmp_path / "job.toml"
    job = 'entrypoint = "my_jobs.counts:job"\n[[outputs.results]]\nsink = "kafka"\ntopic = "counts"\n'
    config.write_text(
        f'{job}[[participants]]\nsink = "kafka"\ntargets = ["127.0.0.1:7101", "127.0.0.1:7102"]\n'
        '[[participants]]\nsink = "sqlite"\ntarget = "127.0.0.1:7103"\n'
    )
    settings = load_settings(SparkJobSettings, config, env={})
    refs = [ref for p in settings.participants for ref in p.refs()]
    assert [(r.name, r.target, r.shard.count) for r in refs] == [
        ("kafka#0", "127.0.0.1:7101", 2),
        ("kafka#1", "127.0.0.1:7102", 2),
        ("sqlite", "127.0.0.1:7103", 1),
    ]
    for body, problem in [
        ('target = "a:1"\ntargets = ["b:1", "c:1"]', "set target (one participant) or targets (its shards), not both"),
        ("", "set target (one participant) or targets (its shards), not both"),
        ('targets = ["b:1", "b:1"]', "each shard needs a target of its own; repeated: b:1"),
    ]:
        config.write_text(f'{job}[[participants]]\nsink = "kafka"\n{body}\n')
        with pytest.raises(InvalidConfig, match=re.escape(problem)):
            load_settings(SparkJobSettings, config, env={})
