"""Connector configs in the compacted configs topic (one partition, so every worker sees one order).

Records (keys are UTF-8, values JSON; a null value deletes):

- ``connector-<name>``: ``{"config": {...}, "tasks": [{...}, ...]}``, connector and task configs in
  one record, so a worker never sees a connector with half of its tasks;
- ``target-state-<name>``: ``{"state": "STARTED" | "PAUSED" | "STOPPED"}``;
- ``restart-<name>``: a :class:`RestartRequest`. Restarts are delivered only once the initial read
  is done, so a worker that starts later does not replay old restarts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from onceflow.core.logging import get_logger
from onceflow.runtime.status import TargetState
from onceflow.runtime.storage.configs import ClusterConfig, ConfigBackingStore, ConnectorEntry
from onceflow.runtime.storage.kafka_log import KafkaBasedLog
from onceflow.runtime.storage.restarts import RestartRequest

_log = get_logger(__name__)
CONNECTOR_PREFIX = "connector-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-"


class KafkaConfigBackingStore(ConfigBackingStore):
    def __init__(self, client_config: Mapping[str, Any], topic: str) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._configs: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {}
        self._states: dict[str, TargetState] = {}
        self._started = False
        self._log = KafkaBasedLog(client_config, topic, self._handle, partitions=1)

    def start(self) -> None:
        self._log.start()
        self._started = True

    def stop(self) -> None:
        self._log.stop()

    def refresh(self) -> None:
        self._log.read_to_end()

    def _handle(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        name = key.decode()
        doc: Any = json.loads(value) if value is not None else None
        with self._lock:
            if name.startswith(CONNECTOR_PREFIX):
                connector = name[len(CONNECTOR_PREFIX) :]
                if doc is None:
                    self._configs.pop(connector, None)
                else:
                    self._configs[connector] = (doc["config"], doc["tasks"])
            elif name.startswith(TARGET_STATE_PREFIX):
                connector = name[len(TARGET_STATE_PREFIX) :]
                if doc is None:
                    self._states.pop(connector, None)
                else:
                    self._states[connector] = TargetState(doc["state"])
            elif not name.startswith(RESTART_PREFIX):
                _log.warning("configs.unknown_record", key=name)
        if name.startswith(RESTART_PREFIX):
            if doc is not None and self._started:
                self._on_restart(RestartRequest(**doc))
            return
        self._on_change()

    def snapshot(self) -> ClusterConfig:
        with self._lock:
            return ClusterConfig(
                {
                    name: ConnectorEntry(name, config, tasks, self._states.get(name, TargetState.STARTED))
                    for name, (config, tasks) in self._configs.items()
                }
            )

    def put_connector(
        self,
        name: str,
        config: Mapping[str, str],
        task_configs: list[dict[str, str]],
        initial_state: TargetState = TargetState.STARTED,
    ) -> None:
        with self._lock:
            exists = name in self._configs
        if not exists:
            self._send(TARGET_STATE_PREFIX + name, {"state": initial_state.value})
        self._send(CONNECTOR_PREFIX + name, {"config": dict(config), "tasks": task_configs})
        self.refresh()

    def remove_connector(self, name: str) -> None:
        self._send(CONNECTOR_PREFIX + name, None)
        self._send(TARGET_STATE_PREFIX + name, None)
        self.refresh()

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._send(TARGET_STATE_PREFIX + name, {"state": state.value})
        self.refresh()

    def request_restart(self, request: RestartRequest) -> None:
        self._send(RESTART_PREFIX + request.connector, asdict(request))

    def _send(self, key: str, doc: Any) -> None:
        self._log.send(key.encode(), None if doc is None else json.dumps(doc).encode())
