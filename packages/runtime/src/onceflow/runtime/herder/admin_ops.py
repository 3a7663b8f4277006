"""The admin operations of a herder (the Kafka Connect REST API as methods).

They work the same in standalone and distributed mode: every change is written to the config
store, and every herder of the cluster reacts to what it reads there. Bad input raises
``InvalidConfig`` naming the setting; unknown names raise ``ConnectorNotFound`` / ``TaskNotFound``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from onceflow.core.config_def import ConfigValidation
from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.runtime.api.connector import Connector, ConnectorType
from onceflow.runtime.config.connector_config import CONNECTOR_CLASS, NAME, TASKS_MAX
from onceflow.runtime.exceptions import (
    ConnectorExists,
    ConnectorNotFound,
    ConnectorNotStopped,
    PluginNotFound,
    TaskNotFound,
)
from onceflow.runtime.plugins import PluginInfo, PluginRegistry
from onceflow.runtime.status import ConnectorStatus, TargetState, TaskId, TaskStatus, WorkState
from onceflow.runtime.storage.configs import ConnectorEntry
from onceflow.runtime.storage.restarts import RestartRequest
from onceflow.runtime.storage.stores import BackingStores
from onceflow.runtime.worker.exactly_once import fence_zombies
from onceflow.runtime.worker.worker import Worker, connector_config_def

_log = get_logger(__name__)
_STATE_OF_TARGET = {
    TargetState.STARTED: WorkState.RUNNING,
    TargetState.PAUSED: WorkState.PAUSED,
    TargetState.STOPPED: WorkState.STOPPED,
}


@dataclass(frozen=True)
class ConnectorInfo:
    name: str
    config: dict[str, str]
    tasks: list[int]
    type: ConnectorType


@dataclass(frozen=True)
class ValidationResult:
    plugin: str
    configs: list[ConfigValidation] = field(default_factory=list)

    @property
    def error_count(self) -> int:
        return sum(len(c.errors) for c in self.configs)


class AdminOperations:
    def __init__(
        self,
        worker: Worker,
        stores: BackingStores,
        plugins: PluginRegistry,
    ) -> None:
        self.worker = worker
        self.configs = stores.configs
        self.statuses = stores.statuses
        self.offsets = stores.offsets
        self.plugins = plugins

    def local_status(self, task_id: TaskId) -> TaskStatus | None:
        """Live status of a task this worker runs (the herder knows its worker)."""
        return None

    # -- connectors --------------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        self.configs.refresh()
        return sorted(self.configs.snapshot().connectors)

    def _entry(self, name: str) -> ConnectorEntry:
        self.configs.refresh()
        entry = self.configs.snapshot().connectors.get(name)
        if entry is None:
            raise ConnectorNotFound(name)
        return entry

    def _info(self, entry: ConnectorEntry) -> ConnectorInfo:
        try:
            kind = self.plugins.lookup(entry.config.get(CONNECTOR_CLASS, "")).connector_type
        except PluginNotFound:
            kind = ConnectorType.SOURCE
        return ConnectorInfo(entry.name, dict(entry.config), list(range(len(entry.task_configs))), kind)

    def connector_info(self, name: str) -> ConnectorInfo:
        return self._info(self._entry(name))

    def connector_config(self, name: str) -> dict[str, str]:
        return dict(self._entry(name).config)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return [dict(t) for t in self._entry(name).task_configs]

    def validate(self, plugin_name: str, config: Mapping[str, str]) -> ValidationResult:
        """Every setting's problems (nothing raised for bad values; an unknown plugin is an error)."""
        try:
            plugin = self.plugins.lookup(plugin_name or config.get(CONNECTOR_CLASS, ""))
        except PluginNotFound as exc:
            raise InvalidConfig(CONNECTOR_CLASS, str(exc)) from None
        results = connector_config_def(plugin.connector_class).validate(
            {CONNECTOR_CLASS: plugin.name, NAME: config.get(NAME, "validate"), **config}
        )
        own = {r.name: r for r in plugin.connector_class().validate(config)}
        merged = []
        for result in results:
            extra = own.pop(result.name, None)
            if extra is not None:
                result.errors.extend(e for e in extra.errors if e not in result.errors)
            merged.append(result)
        return ValidationResult(plugin.name, merged + list(own.values()))

    def _checked_task_configs(self, name: str, config: dict[str, str]) -> list[dict[str, str]]:
        """Validate ``config`` (the first problem raises InvalidConfig naming it) and split it into tasks."""
        if config.get(NAME, name) != name:
            raise InvalidConfig(NAME, f"config names connector {config[NAME]!r} but the request is for {name!r}")
        config[NAME] = name
        if not config.get(CONNECTOR_CLASS):
            raise InvalidConfig(CONNECTOR_CLASS, "is required: the plugin to run (see ListPlugins)")
        result = self.validate(config[CONNECTOR_CLASS], config)
        for item in result.configs:
            if item.errors:
                raise InvalidConfig(item.name, "; ".join(item.errors))
        cls: type[Connector] = self.plugins.lookup(config[CONNECTOR_CLASS]).connector_class
        connector = cls()
        connector.start(config)
        try:
            return connector.task_configs(int(config.get(TASKS_MAX, "1")))
        finally:
            connector.stop()

    def create_connector(
        self, name: str, config: Mapping[str, str], initial_state: TargetState = TargetState.STARTED
    ) -> ConnectorInfo:
        config = dict(config)
        tasks = self._checked_task_configs(name, config)
        self.configs.refresh()
        if name in self.configs.snapshot().connectors:
            raise ConnectorExists(name)
        self.configs.put_connector(ConnectorEntry(name, config, tasks, initial_state))
        _log.info("connector.created", connector=name, tasks=len(tasks), state=initial_state.value)
        return self.connector_info(name)

    def put_connector_config(self, name: str, config: Mapping[str, str]) -> tuple[ConnectorInfo, bool]:
        config = dict(config)
        tasks = self._checked_task_configs(name, config)
        self.configs.refresh()
        created = name not in self.configs.snapshot().connectors
        self.configs.put_connector(ConnectorEntry(name, config, tasks))
        _log.info("connector.configured", connector=name, tasks=len(tasks), created=created)
        return self.connector_info(name), created

    def delete_connector(self, name: str) -> None:
        entry = self._entry(name)
        self.configs.remove_connector(name)
        self.statuses.remove_connector(name, len(entry.task_configs))
        _log.info("connector.deleted", connector=name)

    def _set_target(self, name: str, state: TargetState) -> None:
        self._entry(name)
        self.configs.put_target_state(name, state)
        _log.info("connector.target_state", connector=name, state=state.value)

    def pause_connector(self, name: str) -> None:
        self._set_target(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._set_target(name, TargetState.STOPPED)

    def restart_connector(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> ConnectorStatus:
        """Re-split the config into tasks (a no-op if unchanged); with ``include_tasks``, restart the
        tasks too (``only_failed``: the FAILED ones). The answer shows the tasks that will restart."""
        entry = self._entry(name)
        tasks = self._checked_task_configs(name, dict(entry.config))
        if tasks != entry.task_configs:
            self.configs.put_connector(ConnectorEntry(name, entry.config, tasks))
        status = self.connector_status(name)
        if include_tasks:
            for task in status.tasks:
                if not only_failed or task.state is WorkState.FAILED:
                    task.state = WorkState.RESTARTING
            self.configs.request_restart(RestartRequest(name, include_tasks=True, only_failed=only_failed))
        return status

    def restart_task(self, name: str, task: int) -> None:
        if not 0 <= task < len(self._entry(name).task_configs):
            raise TaskNotFound(name, task)
        self.configs.request_restart(RestartRequest(name, task=task))

    # -- statuses --------------------------------------------------------------------------------------

    def task_status(self, name: str, task: int) -> TaskStatus:
        entry = self._entry(name)
        if not 0 <= task < len(entry.task_configs):
            raise TaskNotFound(name, task)
        return self._task_status(TaskId(name, task))

    def _task_status(self, task_id: TaskId) -> TaskStatus:
        return self.local_status(task_id) or self.statuses.get(task_id) or TaskStatus(task_id, WorkState.UNASSIGNED, "")

    def connector_status(self, name: str) -> ConnectorStatus:
        entry = self._entry(name)
        info = self._info(entry)
        tasks = [self._task_status(TaskId(name, i)) for i in info.tasks]
        worker_id = tasks[0].worker_id if tasks else self.worker.worker_id
        return ConnectorStatus(name, _STATE_OF_TARGET[entry.target_state], worker_id, info.type, "", tasks)

    # -- offsets (KIP-875) -------------------------------------------------------------------------------

    def connector_offsets(self, name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        self._entry(name)
        return self.offsets.offsets(name)

    def _require_stopped(self, name: str) -> ConnectorEntry:
        entry = self._entry(name)
        if entry.target_state is not TargetState.STOPPED:
            raise ConnectorNotStopped(name, entry.target_state.value)
        if self.worker.config.exactly_once_source and self._info(entry).type is ConnectorType.SOURCE:
            fence_zombies(self.worker.config.client_config, name, len(entry.task_configs))
        return entry

    def alter_offsets(self, name: str, offsets: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> str:
        for index, (partition, offset) in enumerate(offsets):
            if not partition:
                raise InvalidConfig(f"offsets[{index}].partition", "must be a non-empty object")
            if offset is not None and not isinstance(offset, dict):
                raise InvalidConfig(f"offsets[{index}].offset", "must be an object or null")
        self._require_stopped(name)
        self.offsets.write(name, offsets)
        _log.info("connector.offsets_altered", connector=name, partitions=len(offsets))
        return f"altered the offsets of {len(offsets)} source partition(s) of connector {name!r}"

    def reset_offsets(self, name: str) -> str:
        self._require_stopped(name)
        partitions = [p for p, _ in self.offsets.offsets(name)]
        self.offsets.write(name, [(p, None) for p in partitions])
        _log.info("connector.offsets_reset", connector=name, partitions=len(partitions))
        return f"reset the offsets of {len(partitions)} source partition(s) of connector {name!r}"

    def plugin_infos(self) -> list[PluginInfo]:
        return self.plugins.plugins()
