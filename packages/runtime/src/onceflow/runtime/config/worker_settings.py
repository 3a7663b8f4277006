"""Settings of a connect worker process (``onceflow connect-worker --config worker.toml``).

Environment overrides use the prefix ``ONCEFLOW_CONNECT__`` (``ONCEFLOW_CONNECT__KAFKA__BOOTSTRAP_SERVERS``).
"""

from __future__ import annotations

import os
import socket
from typing import ClassVar, Literal

from pydantic import Field

from onceflow.core import topics
from onceflow.core.settings import (
    GrpcServerSettings,
    KafkaSettings,
    MeteredSettings,
    Section,
)

ASSIGNMENT_TOPIC = topics.INTERNAL_TOPIC_PREFIX + "connect_assignment"


class TopicSettings(Section):
    """The internal topics (compacted, except the assignment topic, which never holds a record)."""

    configs: str = topics.CONNECT_CONFIGS_TOPIC
    offsets: str = topics.CONNECT_OFFSETS_TOPIC
    status: str = topics.CONNECT_STATUS_TOPIC
    assignment: str = ASSIGNMENT_TOPIC
    offsets_partitions: int = Field(default=5, ge=1, le=1000)
    status_partitions: int = Field(default=5, ge=1, le=1000)


class WorkerSettings(MeteredSettings):
    env_prefix: ClassVar[str] = "ONCEFLOW_CONNECT__"

    #: standalone: this worker runs every connector, configs from ``connectors`` files and the API;
    #: distributed: the workers of ``group_id`` share the tasks, configs in the configs topic.
    mode: Literal["standalone", "distributed"] = "standalone"
    #: Shown in task statuses; default ``<hostname>:<pid>``.
    worker_id: str = ""
    group_id: str = "onceflow-connect"
    #: Source tasks commit records and offsets in one transaction (KIP-618); false: at least once.
    exactly_once_source: bool = True
    #: Partitions of the assignment topic (distributed mode): tasks are spread over this many slots.
    task_slots: int = Field(default=16, ge=1, le=1024)
    session_timeout_ms: int = Field(default=6000, ge=1000)
    task_shutdown_timeout_ms: int = Field(default=10_000, ge=0)
    #: Connector config files (JSON or properties) to create at start (standalone mode).
    connectors: list[str] = Field(default_factory=list)
    #: Connector classes (``module:Class``) to register besides the ``onceflow.connectors`` entry
    #: points, under that name. Only this file (the operator) can add plugins, never the admin API.
    extra_plugins: list[str] = Field(default_factory=list)
    #: Directories that file-reading connectors (access-log-file) may read, symlinks and ``..``
    #: resolved. Empty (the default): no file may be read, so the file tailer is refused.
    allowed_paths: list[str] = Field(default_factory=list)
    kafka: KafkaSettings = KafkaSettings()
    #: librdkafka producer properties for source tasks (e.g. linger.ms), over the worker's defaults.
    producer: dict[str, str] = Field(default_factory=dict)
    topics: TopicSettings = TopicSettings()
    server: GrpcServerSettings = GrpcServerSettings(port=8083)

    def resolved_worker_id(self) -> str:
        return self.worker_id or f"{socket.gethostname()}:{os.getpid()}"
