"""The coordinator's log topic is created with the cluster's replication, and an impossible one is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.toml_writer import to_toml


def test_a_replication_factor_above_the_brokers_stops_the_coordinator_with_one_line(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    config = tmp_path / "coordinator.toml"
    config.write_text(to_toml({"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "server": {"port": 0}}))
    result = subprocess.run(
        [sys.executable, "-m", "onceflow.coordinator", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ONCEFLOW_COORDINATOR__KAFKA__REPLICATION_FACTOR": "3"},
    )
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("onceflow coordinator: invalid setting 'kafka.replication_factor'"), result.stderr
    assert "3 is more than the 1 broker(s) the cluster has up" in last
    assert "Traceback" not in result.stderr
