"""Task statuses in the compacted status topic: key ``status-task-<connector>-<task>``, value JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from onceflow.core.kafka import DEFAULT_REPLICATION, Replication
from onceflow.runtime.status import TaskId, TaskStatus
from onceflow.runtime.storage.kafka_log import KafkaBasedLog, SkippedRecordListener, skip_record
from onceflow.runtime.storage.status import StatusBackingStore

TASK_PREFIX = "status-task-"


def _key(task: TaskId) -> bytes:
    return f"{TASK_PREFIX}{task.connector}-{task.task}".encode()


class KafkaStatusBackingStore(StatusBackingStore):
    """Statuses in the status topic; a record that is not a task status is skipped and reported
    (:func:`skip_record`, ``on_skipped``), never stopping the reader."""

    def __init__(
        self,
        client_config: Mapping[str, Any],
        topic: str,
        *,
        partitions: int = 5,
        on_skipped: SkippedRecordListener | None = None,
        replication: Replication = DEFAULT_REPLICATION,
    ) -> None:
        self.topic = topic
        self._on_skipped = on_skipped
        self._lock = threading.Lock()
        self._statuses: dict[bytes, TaskStatus] = {}
        self._log = KafkaBasedLog(client_config, topic, self._handle, partitions=partitions, replication=replication)

    def start(self) -> None:
        self._log.start()

    def stop(self) -> None:
        self._log.stop()

    def _handle(self, key: bytes | None, value: bytes | None) -> None:
        if key is None or not key.startswith(TASK_PREFIX.encode()):
            return
        try:
            status = None if value is None else TaskStatus.from_json(json.loads(value))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            skip_record(self.topic, key, f"not a task status: {type(exc).__name__}: {exc}", self._on_skipped)
            return
        with self._lock:
            if status is None:
                self._statuses.pop(key, None)
            else:
                self._statuses[key] = status

    def put(self, status: TaskStatus) -> None:
        with self._lock:
            self._statuses[_key(status.id)] = status
        self._log.send(_key(status.id), json.dumps(status.to_json()).encode(), flush=False)

    def get(self, task: TaskId) -> TaskStatus | None:
        with self._lock:
            return self._statuses.get(_key(task))

    def remove_connector(self, connector: str, tasks: int) -> None:
        for task in range(tasks):
            self._log.send(_key(TaskId(connector, task)), None, flush=False)
        self.flush()

    def flush(self) -> None:
        self._log.flush()
