"""Task statuses as reported by the workers that run them."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

from onceflow.runtime.status import TaskId, TaskStatus


class StatusBackingStore(ABC):
    """Last reported status of every task. Thread-safe."""

    def start(self) -> None:  # noqa: B027 - optional hook
        """Load what is stored."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    @abstractmethod
    def put(self, status: TaskStatus) -> None:
        """Record ``status`` (asynchronously for remote stores; see :meth:`flush`)."""

    @abstractmethod
    def get(self, task: TaskId) -> TaskStatus | None: ...

    @abstractmethod
    def remove_connector(self, connector: str, tasks: int) -> None:
        """Forget the statuses of a deleted connector's tasks."""

    def flush(self) -> None:  # noqa: B027 - optional hook
        """Wait until every :meth:`put` so far is stored."""


class MemoryStatusBackingStore(StatusBackingStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._statuses: dict[TaskId, TaskStatus] = {}

    def put(self, status: TaskStatus) -> None:
        with self._lock:
            self._statuses[status.id] = status

    def get(self, task: TaskId) -> TaskStatus | None:
        with self._lock:
            return self._statuses.get(task)

    def remove_connector(self, connector: str, tasks: int) -> None:
        with self._lock:
            for task in [t for t in self._statuses if t.connector == connector]:
                del self._statuses[task]
