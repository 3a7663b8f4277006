"""An in-memory transaction log, for unit tests and benchmarks.

It goes through the same record encoding as the Kafka log, and it fences like one: several
:class:`MemoryTransactionLog` instances over one :class:`MemoryLogStorage` behave like coordinator
instances sharing a topic, where the last one opened is the only writer.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from onceflow.coordinator.exceptions import CoordinatorFenced, LogAppendRejected, TransactionLogError
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.records import LogMarker, LogRecord, decode, encode


class MemoryLogStorage:
    """The "topic" behind in-memory logs: encoded records plus the generation of the current owner."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: list[tuple[bytes, bytes | None]] = []
        self.generation = 0
        #: Test hook: the next ``append`` raises this instead of writing.
        self.fail_next_append: TransactionLogError | LogAppendRejected | None = None
        #: How many appends wrote records (a test counts the log's transactions with it).
        self.appends = 0


class MemoryTransactionLog(TransactionLog):
    """A :class:`TransactionLog` in process memory; durable only as long as its storage object lives."""

    def __init__(self, storage: MemoryLogStorage | None = None) -> None:
        self.storage = storage or MemoryLogStorage()
        self._generation: int | None = None

    def open(self) -> list[LogRecord]:
        with self.storage.lock:
            self.storage.generation += 1
            self._generation = self.storage.generation
            decoded = (decode(key, value) for key, value in self.storage.entries)
            return [record for record in decoded if not isinstance(record, LogMarker)]

    def append(self, records: Sequence[LogRecord]) -> None:
        encoded = [encode(record) for record in records]
        with self.storage.lock:
            if self._generation is None:
                raise TransactionLogError("the log is not open")
            if self._generation != self.storage.generation:
                raise CoordinatorFenced(f"generation {self._generation} < {self.storage.generation}")
            failure, self.storage.fail_next_append = self.storage.fail_next_append, None
            if failure is not None:
                raise failure
            self.storage.entries.extend(encoded)
            self.storage.appends += 1

    def close(self) -> None:
        self._generation = None

    @property
    def description(self) -> str:
        return "memory"
