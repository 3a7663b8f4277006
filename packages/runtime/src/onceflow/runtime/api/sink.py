"""Sink connectors: write consumed records to an external system.

The runtime consumes the connector's ``topics`` with read_committed and hands batches to
:meth:`SinkTask.put`; after :meth:`SinkTask.flush` returns, the consumed offsets are committed to
the connector's consumer group (``connect-<connector>``), so delivery is at least once. A sink that
needs exactly once stores the offsets it is given with its data, like the onceflow consumer.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from onceflow.core.config_def import ConfigDef
from onceflow.runtime.api.connector import Connector, ConnectorType, Task


@dataclass(frozen=True, slots=True)
class SinkRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None
    headers: list[tuple[str, bytes]]


class SinkTask(Task):
    @abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None: ...

    def flush(self) -> None:
        """Make everything ``put`` so far durable; the default has nothing buffered."""


class SinkConnector(Connector):
    connector_type: ClassVar[ConnectorType] = ConnectorType.SINK

    @classmethod
    @abstractmethod
    def config_def(cls) -> ConfigDef: ...

    @classmethod
    @abstractmethod
    def task_class(cls) -> type[SinkTask]: ...
