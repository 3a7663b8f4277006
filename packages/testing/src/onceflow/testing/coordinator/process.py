"""Run a coordinator as a child process, for tests and single-machine runs.

``CoordinatorProcess`` is a :class:`onceflow.core.process.ServerProcess`: ``start()`` returns only
once the child serves gRPC (or raises with the tail of its log), ``kill()`` is a real ``kill -9``,
``start()`` after ``stop()``/``kill()`` reuses the same config and the same port, and child stderr is
appended to ``work_dir/coordinator.log``.

Tests run on disposable brokers, so unless the settings say otherwise the coordinator initialises
a missing decision log itself (``transaction_log.init_if_missing``); the tests of the fail-closed
log set it to false, as production does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from onceflow.coordinator.servicer import SERVICE_NAME
from onceflow.core.grpc import open_channel
from onceflow.core.process import ServerProcess
from onceflow.core.topics import COORDINATOR_LOG_TOPIC

LOG_FILE = "coordinator.log"
CONFIG_FILE = "coordinator.toml"
READY_FILE = "ready.json"


class CoordinatorProcess(ServerProcess):
    """``python -m onceflow.coordinator`` configured by ``settings`` (the TOML structure as nested dicts).

    ``env`` adds environment variables, e.g. the crash hook
    ``{"ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER": "commit-logged"}``. With ``standby.enabled`` the
    child is ready once it answers gRPC; :meth:`wait_active` waits until it leads and serves.
    """

    NAME = "coordinator"
    MODULE = "onceflow.coordinator"
    LOG_FILE = LOG_FILE
    CONFIG_FILE = CONFIG_FILE
    READY_FILE = READY_FILE

    def __init__(self, work_dir: Path, settings: Mapping[str, Any] | None = None, **options: Any) -> None:
        merged = dict(settings or {})
        merged["transaction_log"] = {"init_if_missing": True, **merged.get("transaction_log", {})}
        super().__init__(work_dir, merged, **options)

    def serving(self, timeout: float = 2.0) -> bool:
        """Whether the child reports the TransactionCoordinator service SERVING (it is the active one)."""
        channel = open_channel(self.target)
        try:
            stub = health_pb2_grpc.HealthStub(channel)
            answer = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout)
            return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)
        except grpc.RpcError:
            return False
        finally:
            channel.close()

    def wait_active(self, timeout: float = 60.0) -> float:
        """Wait until the child is the active coordinator; returns the seconds it took. AssertionError
        (with the log's tail) if it exits or is still not active after ``timeout``."""
        started = time.monotonic()
        while not self.serving():
            if not self.is_running():
                raise AssertionError(
                    f"coordinator exited ({self.returncode}) before it became active:\n{self.log_tail()}"
                )
            if time.monotonic() - started > timeout:
                raise AssertionError(f"coordinator not active after {timeout}s:\n{self.log_tail()}")
            time.sleep(0.05)
        return time.monotonic() - started


def log_topic_exists(bootstrap_servers: str, topic: str = COORDINATOR_LOG_TOPIC) -> bool:
    """Whether the decision log topic exists on the cluster (the tests that check nobody re-created it)."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})  # held: a collected client fails its futures
    future = admin.describe_topics(TopicCollection([topic]))[topic]
    try:
        future.result(20)
    except KafkaException:
        return False
    return True
