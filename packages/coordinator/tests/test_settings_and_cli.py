"""Settings (file + environment, errors naming the setting) and the CLI wiring."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from onceflow.cli.app import build_parser
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CONFIG = ROOT / "services" / "coordinator" / "coordinator.toml"


def test_the_default_config_loads_and_env_overrides_it() -> None:
    settings = load_settings(
        CoordinatorSettings,
        DEFAULT_CONFIG,
        env={
            "ONCEFLOW_COORDINATOR__KAFKA__BOOTSTRAP_SERVERS": "kafka:9092",
            "ONCEFLOW_COORDINATOR__TRANSACTION_LOG__BACKEND": "memory",
            "ONCEFLOW_COORDINATOR__PREPARE_TIMEOUT_MS": "2500",
        },
    )
    assert settings.server.port == 7100
    assert settings.kafka.bootstrap_servers == "kafka:9092"
    assert settings.transaction_log.backend == "memory"
    assert settings.transaction_log.transactional_id == "onceflow-coordinator"
    config = settings.engine_config()
    assert (config.prepare_timeout, config.commit_backoff.initial, config.commit_backoff.maximum) == (2.5, 0.1, 10.0)


def test_bad_settings_name_the_setting(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[commit_retry]\ninitial_backoff_ms = 500\nmax_backoff_ms = 100\n")
    with pytest.raises(InvalidConfig, match="commit_retry") as error:
        load_settings(CoordinatorSettings, config, env={})
    assert "max_backoff_ms (100) must be >= initial_backoff_ms (500)" in str(error.value)
    with pytest.raises(InvalidConfig, match="ONCEFLOW_COORDINATOR__TRANSACTION_LOG__BACKEND"):
        load_settings(CoordinatorSettings, None, env={"ONCEFLOW_COORDINATOR__TRANSACTION_LOG__BACKEND": "etcd"})


def test_onceflow_has_the_coordinator_and_txn_commands() -> None:
    parser = build_parser()
    args = parser.parse_args(["coordinator", "--config", "x.toml"])
    assert args.config == "x.toml" and callable(args.func)
    args = parser.parse_args(["txn", "resolve", "ipcount:4", "--commit", "--yes", "--coordinator", "h:1"])
    assert (args.txn.job, args.txn.batch, args.commit, args.yes, args.coordinator) == ("ipcount", 4, True, True, "h:1")
    with pytest.raises(SystemExit):
        parser.parse_args(["txn", "resolve", "ipcount:4", "--commit", "--abort"])


def test_python_m_reports_a_bad_config_and_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("prepare_timeout_ms = -1\n")
    result = subprocess.run(
        [sys.executable, "-m", "onceflow.coordinator", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "prepare_timeout_ms" in result.stderr
