"""Source connectors: read an external system and return records with their source position.

Every :class:`SourceRecord` carries its *source partition* (which stream it came from, e.g. a file
path) and *source offset* (where in that stream it ends, e.g. file identity and byte offset). The
runtime stores the offset of the last record of each partition, with the records themselves in one
Kafka transaction when the task is exactly-once; on restart the task asks its
:class:`OffsetReader` where to resume.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from onceflow.core.config_def import ConfigDef
from onceflow.runtime.api.connector import Connector, ConnectorType, Task


@dataclass(slots=True)
class SourceRecord:
    """One record to produce. ``headers`` are raw bytes.

    ``timestamp`` (epoch milliseconds) sets the Kafka record time; None leaves it to the producer's clock.
    Leave it None for event times that may be old (a log replayed from last month): Kafka rolls a
    segment when a record is ``segment.ms`` newer than the segment's first one (the next transaction
    marker is), and time retention then deletes the rolled segment before a job has read it.
    """

    source_partition: Mapping[str, Any]
    source_offset: Mapping[str, Any]
    topic: str
    value: bytes | None
    key: bytes | None = None
    timestamp: int | None = None
    headers: list[tuple[str, bytes]] | None = None
    partition: int | None = None


#: The key a source offset sets to true when its partition's input has ended (see :class:`EndOfInput`).
END_OF_INPUT_KEY = "end_of_input"


@dataclass(frozen=True, slots=True)
class EndOfInput:
    """A bounded source has read all of its input (a finished file, a generator's last event).

    The runtime commits ``source_offset`` (with :data:`END_OF_INPUT_KEY` set, so a restarted task
    knows it is done) and, once every one of the connector's ``sources`` source partitions has ended,
    writes an end-of-input marker (:mod:`onceflow.core.end_of_input`) to every partition of
    ``topics``. A job reading those topics then closes every event-time window.
    """

    source_partition: Mapping[str, Any]
    source_offset: Mapping[str, Any]
    topics: tuple[str, ...]
    #: How many source partitions of the connector make up the whole input (e.g. its tasks).
    sources: int = 1


class OffsetReader(Protocol):
    """Committed source offsets of the task's connector."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The last committed offset of ``partition``, or None if it has none."""
        ...


@dataclass(frozen=True)
class SourceTaskContext:
    """What the runtime hands a source task before ``start``."""

    connector: str
    task: int
    offset_reader: OffsetReader
    #: The worker's ``allowed_paths``: a task that reads files reads only under these directories
    #: (open each file with :func:`onceflow.core.confined_open.open_confined`, which checks what it
    #: opened, on every open); empty allows no file.
    allowed_paths: tuple[str, ...] = ()


class SourceTask(Task):
    """Reads records. ``poll`` is called in a loop on the task's thread.

    ``poll`` should return within about a poll interval (return ``[]`` when there is nothing new);
    the runtime commits transactions and serves pause/stop between polls.
    """

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        """Called once before ``start``."""
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceRecord]: ...

    def commit(self) -> None:
        """Called after the offsets of every record returned so far are committed."""

    def end_of_input(self) -> EndOfInput | None:
        """Asked after every poll that returned nothing: an :class:`EndOfInput` when a bounded input
        is finished (the runtime then ends it, see there), None while more may come (the default:
        an unbounded source)."""
        return None


class SourceConnector(Connector):
    connector_type: ClassVar[ConnectorType] = ConnectorType.SOURCE

    @classmethod
    @abstractmethod
    def config_def(cls) -> ConfigDef: ...

    @classmethod
    @abstractmethod
    def task_class(cls) -> type[SourceTask]: ...
