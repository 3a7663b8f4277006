"""Reading a binding's rows back from where a participant wrote them: the audit's view of a sink."""

from __future__ import annotations

import abc
from typing import Any, Final

from onceflow.core.contract import SinkBinding

#: ``last_committed`` of a job that committed nothing to the sink.
NO_BATCH: Final = -1

Row = dict[str, Any]


class BindingReader(abc.ABC):
    """One participant connection (a database, a Kafka cluster), read the way its participant wrote it.

    Rows come back as Python values of the binding's Arrow types (datetime, Decimal, date, bytes,
    bool, ...), whatever the storage format, so rows of different sinks compare directly.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    @abc.abstractmethod
    def rows(self, binding: SinkBinding) -> list[Row]:
        """Every row ``binding`` holds, in storage order (offset order for a topic)."""

    @abc.abstractmethod
    def default_binding(self) -> SinkBinding:
        """What a job that declares no bindings writes here (the participant's default: IP-count results)."""

    @abc.abstractmethod
    def last_committed(self, job: str) -> int:
        """The highest batch of ``job`` committed to this connection, or :data:`NO_BATCH`."""

    def close(self) -> None:  # noqa: B027 - nothing to close by default
        """Release the connection."""

    def __enter__(self) -> BindingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
