"""The coordinator's log topic cannot be lost silently (issue 14).

- A log topic that would delete decisions (``cleanup.policy`` ``delete`` or ``compact,delete``) is
  refused at start: exit code 2 and one error naming the topic and the setting.
- A log topic deleted (or deleted and re-created) under a running coordinator stops it at its next
  write (exit code 4, a ``txnlog.topic_lost`` line naming the topic), and the coordinator does not
  re-create the topic itself.

Real broker and coordinator processes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.coordinator.service.server import EXIT_LOG_FAILED
from onceflow.core.contract.clients import CoordinatorClient
from onceflow.core.toml_writer import to_toml
from onceflow.core.topics import COORDINATOR_LOG_TOPIC
from onceflow.testing.coordinator import CoordinatorProcess

pytestmark = pytest.mark.slow


def _settings(broker: EmbeddedBroker) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "transaction_log": {"timeout_ms": 10_000},
        "log": {"level": "INFO"},
    }


def _admin(broker: EmbeddedBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _run_coordinator(broker: EmbeddedBroker, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "coordinator.toml"
    config.write_text(to_toml({**_settings(broker), "server": {"port": 0}}))
    return subprocess.run(
        [sys.executable, "-m", "onceflow.coordinator", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("policy", ["delete", "compact,delete"])
def test_a_log_topic_with_a_delete_policy_is_refused_at_start(
    broker: EmbeddedBroker, tmp_path: Path, policy: str
) -> None:
    admin = _admin(broker)
    spec = NewTopic(COORDINATOR_LOG_TOPIC, 1, 1, config={"cleanup.policy": policy})
    admin.create_topics([spec])[COORDINATOR_LOG_TOPIC].result(20)

    result = _run_coordinator(broker, tmp_path)

    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert f"log topic {COORDINATOR_LOG_TOPIC} has cleanup.policy={policy}" in result.stderr, result.stderr


def test_the_log_topic_is_created_compacted_without_retention(broker: EmbeddedBroker, tmp_path: Path) -> None:
    with CoordinatorProcess(tmp_path / "coordinator", _settings(broker)):
        resource = ConfigResource(ConfigResource.Type.TOPIC, COORDINATOR_LOG_TOPIC)
        admin = _admin(broker)
        configs = admin.describe_configs([resource])[resource].result(20)
    assert {name: configs[name].value for name in ("cleanup.policy", "retention.ms", "retention.bytes")} == {
        "cleanup.policy": "compact",
        "retention.ms": "-1",
        "retention.bytes": "-1",
    }


def _register(process: CoordinatorProcess) -> int:
    with CoordinatorClient(process.target, timeout_s=30) as client:
        return int(client.register_writer("ipcount", "driver").epoch)


def _log_topic_exists(broker: EmbeddedBroker) -> bool:
    admin = _admin(broker)
    future = admin.describe_topics(TopicCollection([COORDINATOR_LOG_TOPIC]))[COORDINATOR_LOG_TOPIC]
    try:
        future.result(20)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("recreate", [False, True], ids=["deleted", "deleted-and-recreated"])
def test_a_log_topic_lost_under_a_running_coordinator_stops_it(
    broker: EmbeddedBroker, tmp_path: Path, recreate: bool
) -> None:
    process = CoordinatorProcess(tmp_path / "coordinator", _settings(broker)).start()
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
        assert _log_topic_exists(broker) is recreate  # the coordinator did not re-create it
    finally:
        process.stop()
