"""Reading a binding's rows back from where a participant wrote them: the audit's view of a sink."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Final

from onceflow.contract import SinkBinding
from onceflow.contract.shards import record_names

#: ``last_committed`` of a job that committed nothing to the sink.
NO_BATCH: Final = -1

Row = dict[str, Any]


class BindingReader(abc.ABC):
    """One participant connection (a database, a Kafka cluster), read the way its participant wrote it.

    Rows come back as Python values of the binding's Arrow types (datetime, Decimal, date, bytes,
    bool, ...), whatever the storage format, so rows of different sinks compare directly.

    A sink served by ``shards`` participant processes is read whole: its tables and topics hold
    every shard's rows, and :meth:`last_committed` is the last batch every shard committed.
    """

    def __init__(self, name: str, *, shards: int = 1) -> None:
        self.name = name
        self.shards = shards

    @property
    def record_names(self) -> list[str]:
        """The names the sink's commit records carry: the sink's, or each shard's (``<sink>#<index>``)."""
        return record_names(self.name, self.shards)

    def whole(self, last_by_record: Mapping[str, int]) -> int:
        """The sink's last committed batch from each record name's last one: the lowest over the
        shards (a batch is committed in the sink once every shard committed it)."""
        return min(last_by_record.get(name, NO_BATCH) for name in self.record_names)

    @abc.abstractmethod
    def rows(self, binding: SinkBinding) -> list[Row]:
        """Every row ``binding`` holds, in storage order (offset order for a topic)."""

    @abc.abstractmethod
    def last_committed(self, job: str) -> int:
        """The highest batch of ``job`` committed to this connection (by every shard of it), or :data:`NO_BATCH`."""

    def close(self) -> None:  # noqa: B027 - nothing to close by default
        """Release the connection."""

    def __enter__(self) -> BindingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
