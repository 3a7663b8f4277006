"""Connector and Task: the two halves of a plugin.

A :class:`Connector` is configured once per connector and splits the work into task configs. Each
:class:`Task` runs on a worker thread with one of those configs. Both are created by the runtime
with no arguments; configuration arrives through ``start``.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from onceflow.core.config_def import ConfigDef, ConfigValidation


class ConnectorType(enum.Enum):
    SOURCE = "source"
    SINK = "sink"


class Task(ABC):
    """One unit of work. ``start`` receives the task config; ``stop`` may be called from another thread."""

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...


class Connector(ABC):
    """Validates its config and splits the work into at most ``tasks.max`` task configs.

    ``task_configs`` must be a pure function of the config and ``max_tasks``: every worker of a
    cluster may compute it.
    """

    #: Plugin version shown by ``ListPlugins``.
    version: ClassVar[str] = "0.0.0"
    connector_type: ClassVar[ConnectorType]

    @classmethod
    @abstractmethod
    def config_def(cls) -> ConfigDef:
        """Every setting the connector reads (the runtime adds the common ones)."""

    @classmethod
    @abstractmethod
    def task_class(cls) -> type[Task]: ...

    def validate(self, config: Mapping[str, str]) -> list[ConfigValidation]:
        """Per-setting problems; override to add checks that span settings."""
        return self.config_def().validate(config)

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None: ...

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]: ...

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release what ``start`` took. The default has nothing to release."""
