"""The decision log is created with the cluster's replication, and an impossible one is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.toml_writer import to_toml


@pytest.mark.parametrize(
    "command",
    [["onceflow.cli.app", "txn", "init-log"], ["onceflow.coordinator"]],
    ids=["txn-init-log", "coordinator-init-if-missing"],
)
def test_a_replication_factor_above_the_brokers_is_refused_with_one_line(
    broker: EmbeddedBroker, tmp_path: Path, command: list[str]
) -> None:
    config = tmp_path / "coordinator.toml"
    settings = {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "server": {"port": 0},
        "transaction_log": {"init_if_missing": True},
    }
    config.write_text(to_toml(settings))
    result = subprocess.run(
        [sys.executable, "-m", *command, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ONCEFLOW_COORDINATOR__KAFKA__REPLICATION_FACTOR": "3"},
    )
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "invalid setting 'kafka.replication_factor'" in last, result.stderr
    assert "3 is more than the 1 broker(s) the cluster has up" in last
    assert "Traceback" not in result.stderr
