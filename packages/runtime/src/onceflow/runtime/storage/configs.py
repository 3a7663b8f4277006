"""Connector configs, their task configs and target states: what should run (not where)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from onceflow.runtime.status import TargetState, TaskId
from onceflow.runtime.storage.restarts import RestartRequest


@dataclass(frozen=True)
class ConnectorEntry:
    """A connector: its config, its task configs and its target state (given to
    :meth:`ConfigBackingStore.put_connector`: the state a new connector starts in)."""

    name: str
    config: dict[str, str]
    task_configs: list[dict[str, str]]
    target_state: TargetState = TargetState.STARTED


@dataclass(frozen=True)
class ClusterConfig:
    """A consistent snapshot of every connector."""

    connectors: dict[str, ConnectorEntry] = field(default_factory=dict)

    def tasks(self) -> list[TaskId]:
        """Every configured task, sorted by connector then task id (stopped connectors included)."""
        return [
            TaskId(name, i) for name in sorted(self.connectors) for i in range(len(self.connectors[name].task_configs))
        ]


ChangeListener = Callable[[], None]
RestartListener = Callable[[RestartRequest], None]


class ConfigBackingStore(ABC):
    """Where connector configs live. Thread-safe; listeners are called on the store's thread."""

    def __init__(self) -> None:
        self._on_change: ChangeListener = lambda: None
        self._on_restart: RestartListener = lambda request: None

    def set_listeners(self, on_change: ChangeListener, on_restart: RestartListener) -> None:
        self._on_change = on_change
        self._on_restart = on_restart

    def start(self) -> None:  # noqa: B027 - optional hook
        """Load what is stored."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    def refresh(self) -> None:  # noqa: B027 - optional hook
        """Make every write made anywhere before this call visible in :meth:`snapshot`."""

    @abstractmethod
    def snapshot(self) -> ClusterConfig: ...

    @abstractmethod
    def put_connector(self, entry: ConnectorEntry) -> None:
        """Create or replace a connector; an existing connector keeps its target state (a new one
        starts in ``entry.target_state``)."""

    @abstractmethod
    def remove_connector(self, name: str) -> None: ...

    @abstractmethod
    def put_target_state(self, name: str, state: TargetState) -> None: ...

    @abstractmethod
    def request_restart(self, request: RestartRequest) -> None: ...


class MemoryConfigBackingStore(ConfigBackingStore):
    """Configs in a dict (standalone mode: they come from files and the admin API)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._connectors: dict[str, ConnectorEntry] = {}

    def snapshot(self) -> ClusterConfig:
        with self._lock:
            return ClusterConfig(dict(self._connectors))

    def put_connector(self, entry: ConnectorEntry) -> None:
        with self._lock:
            old = self._connectors.get(entry.name)
            state = old.target_state if old is not None else entry.target_state
            config, tasks = dict(entry.config), [dict(t) for t in entry.task_configs]
            self._connectors[entry.name] = ConnectorEntry(entry.name, config, tasks, state)
        self._on_change()

    def remove_connector(self, name: str) -> None:
        with self._lock:
            self._connectors.pop(name, None)
        self._on_change()

    def put_target_state(self, name: str, state: TargetState) -> None:
        with self._lock:
            entry = self._connectors.get(name)
            if entry is not None:
                self._connectors[name] = replace(entry, target_state=state)
        self._on_change()

    def request_restart(self, request: RestartRequest) -> None:
        self._on_restart(request)
