"""Attacks on the coordinator's decision log: it fails closed (issue 14, issue 22 item 3).

Whoever may delete, truncate or reconfigure ``_onceflow_coordinator_log`` must not make committed
batches read ABORTED. Each attack is refused with one line that says what is wrong and how to
recover, and the coordinator never re-creates or starts over its log on its own:

- a log topic with a delete policy or a bounded retention: refused at start (exit 2);
- a missing log topic: refused at start, not created (first start: ``onceflow txn init-log``);
- a log truncated at its head (DeleteRecords) or re-created empty: refused at start;
- a log deleted (or deleted and re-created) under a running coordinator: it stops at its next write.

How a lost log is rebuilt from the participants' commit records is tests/twopc/test_lost_log.py.

Real broker, coordinator and participant processes, the ``onceflow`` command as an operator runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import grpc
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from onceflow.broker.embedded import BrokerProcess, EmbeddedBroker
from onceflow.contract.clients import CoordinatorClient
from onceflow.coordinator.service import EXIT_LOG_FAILED
from onceflow.core.service import EXIT_CONFIG
from onceflow.core.toml_writer import to_toml
from onceflow.core.topics import COORDINATOR_LOG_TOPIC
from onceflow.testing.coordinator import CoordinatorProcess, log_topic_exists

pytestmark = pytest.mark.slow

ONCEFLOW: Final = Path(sys.executable).parent / "onceflow"
JOB: Final = "ipcount"


def _settings(broker: EmbeddedBroker | BrokerProcess, *, init_if_missing: bool = False) -> dict[str, Any]:
    log = {"init_if_missing": init_if_missing, "timeout_ms": 10_000}
    return {"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "transaction_log": log, "log": {"level": "INFO"}}


def _admin(broker: EmbeddedBroker | BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _config(path: Path, settings: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_toml({**settings, "server": {"port": 0}}))
    return path


def _onceflow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ONCEFLOW), *args], capture_output=True, text=True, timeout=120)


def _run_coordinator(broker: EmbeddedBroker, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = _config(tmp_path / "coordinator.toml", _settings(broker))
    return subprocess.run(
        [sys.executable, "-m", "onceflow.coordinator", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _refused(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == EXIT_CONFIG, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"cleanup.policy": "delete"}, "cleanup.policy=delete"),
        ({"cleanup.policy": "compact,delete"}, "cleanup.policy=compact,delete"),
        ({"cleanup.policy": "compact", "retention.ms": "3600000"}, "retention.ms=3600000"),
    ],
    ids=["delete", "compact-delete", "bounded-retention"],
)
def test_a_log_topic_that_could_delete_decisions_is_refused_at_start(
    broker: EmbeddedBroker, tmp_path: Path, config: dict[str, str], named: str
) -> None:
    spec = NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config={"retention.bytes": "-1", **config})
    admin = _admin(broker)
    admin.create_topics([spec])[COORDINATOR_LOG_TOPIC].result(20)

    _refused(_run_coordinator(broker, tmp_path), f"log topic {COORDINATOR_LOG_TOPIC} has {named}")


def test_a_missing_log_is_refused_never_created_and_init_log_creates_it(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """Steps:
    1. No log topic: the coordinator refuses, naming the topic and both ways out, and creates nothing.
    2. ``onceflow txn init-log`` creates it compacted, without retention, with its genesis record.
    3. The coordinator now serves; a second init-log leaves the log alone.
    """
    # Step 1
    _refused(
        _run_coordinator(broker, tmp_path),
        f"decision log topic {COORDINATOR_LOG_TOPIC} does not exist",
        "onceflow txn init-log",
        "onceflow txn rebuild",
    )
    assert not log_topic_exists(broker.bootstrap_servers)
    # Step 2
    config = _config(tmp_path / "admin.toml", _settings(broker))
    created = _onceflow("txn", "init-log", "--config", str(config))
    assert created.returncode == 0, created.stderr
    assert f"decision log {COORDINATOR_LOG_TOPIC} initialised" in created.stdout
    resource = ConfigResource(ConfigResource.Type.TOPIC, COORDINATOR_LOG_TOPIC)
    admin = _admin(broker)
    configs = admin.describe_configs([resource])[resource].result(20)
    assert {name: configs[name].value for name in ("cleanup.policy", "retention.ms", "retention.bytes")} == {
        "cleanup.policy": "compact",
        "retention.ms": "-1",
        "retention.bytes": "-1",
    }
    # Step 3
    with CoordinatorProcess(tmp_path / "coordinator", _settings(broker)) as process:
        assert _register(process) == 1
        again = _onceflow("txn", "init-log", "--config", str(config))
        assert again.returncode == 0, again.stderr
        assert "already initialised" in again.stdout
        assert _register(process) == 2, "init-log fenced nobody"


def _register(process: CoordinatorProcess) -> int:
    with CoordinatorClient(process.target, timeout_s=30) as client:
        return int(client.register_writer(JOB, "driver").epoch)


def _truncate_head(broker: EmbeddedBroker, offset: int) -> None:
    """``kafka-delete-records`` to ``offset``, the way it works on Apache Kafka too (a compacted topic
    refuses DeleteRecords there): switch the policy to compact,delete, delete, switch it back."""
    admin = _admin(broker)
    resource = ConfigResource(ConfigResource.Type.TOPIC, COORDINATOR_LOG_TOPIC)

    def policy(value: str) -> None:
        entry = ConfigEntry("cleanup.policy", value, incremental_operation=AlterConfigOpType.SET)
        alter = ConfigResource(ConfigResource.Type.TOPIC, COORDINATOR_LOG_TOPIC, incremental_configs=[entry])
        admin.incremental_alter_configs([alter])[resource].result(20)

    policy("compact,delete")
    partition = TopicPartition(COORDINATOR_LOG_TOPIC, 0, offset)
    admin.delete_records([partition])[partition].result(20)
    policy("compact")


@pytest.mark.parametrize("attack", ["head-deleted", "recreated-empty"])
def test_a_log_that_lost_its_head_or_was_recreated_empty_is_refused_at_start(
    broker: EmbeddedBroker, tmp_path: Path, attack: str
) -> None:
    with CoordinatorProcess(tmp_path / "first", _settings(broker, init_if_missing=True)) as first:
        assert _register(first) == 1
        assert _register(first) == 2
    if attack == "head-deleted":
        _truncate_head(broker, 2)
        needles = ["lost records", "log start offset is 2", "onceflow txn rebuild"]
    else:
        admin = _admin(broker)
        admin.delete_topics([COORDINATOR_LOG_TOPIC])[COORDINATOR_LOG_TOPIC].result(20)
        spec = NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config={"cleanup.policy": "compact", "retention.ms": "-1"})
        admin.create_topics([spec])[COORDINATOR_LOG_TOPIC].result(20)
        needles = ["holds no decisions and no genesis record", "onceflow txn rebuild"]

    _refused(_run_coordinator(broker, tmp_path), *needles)


@pytest.mark.parametrize("recreate", [False, True], ids=["deleted", "deleted-and-recreated"])
def test_a_log_topic_lost_under_a_running_coordinator_stops_it(
    broker: EmbeddedBroker, tmp_path: Path, recreate: bool
) -> None:
    process = CoordinatorProcess(tmp_path / "coordinator", _settings(broker, init_if_missing=True)).start()
    try:
        assert _register(process) == 1
        admin = _admin(broker)
        admin.delete_topics([COORDINATOR_LOG_TOPIC])[COORDINATOR_LOG_TOPIC].result(20)
        if recreate:
            spec = NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config={"cleanup.policy": "compact"})
            admin.create_topics([spec])[COORDINATOR_LOG_TOPIC].result(20)

        with pytest.raises(grpc.RpcError) as refused:
            _register(process)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert process.wait(20) == EXIT_LOG_FAILED
        log = process.log_tail(200)
        assert "txnlog.topic_lost" in log and COORDINATOR_LOG_TOPIC in log, log
        assert ("re-created" if recreate else "was deleted") in log, log
        assert log_topic_exists(broker.bootstrap_servers) is recreate  # the coordinator did not re-create it
    finally:
        process.stop()
