"""The durable log of the coordinator's decisions (an extension point with memory and Kafka backends)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from onceflow.coordinator.log.records import LogRecord


class TransactionLog(ABC):
    """Where the coordinator's decisions become durable.

    Contract of every implementation:

    - :meth:`open` makes this instance the only writer: it fences every earlier instance of the same
      log (their next :meth:`append` raises :class:`CoordinatorFenced`), then returns the committed
      records in write order, for replay. Records of a key may repeat; the last one wins.
    - :meth:`append` returns only once every record is durable, and either all of them become
      visible to a later :meth:`open` or none does. It raises :class:`CoordinatorFenced` when a
      newer instance owns the log and :class:`TransactionLogError` when the outcome is unknown;
      either way the caller must stop serving (a restart replays the truth).
    - Records are snapshots: replaying only the newest record of every key gives the same state.
    - It fails closed: :meth:`open` raises a
      :class:`~onceflow.coordinator.log.refusals.LogRefused` for a log that is missing, lost records
      or is configured so that it could, and never starts such a log over on its own.
    - :meth:`confirm_owner` returns only if no newer instance had fenced this one when it ran: what
      this instance read from memory before the call was the whole truth at that moment.
    """

    @abstractmethod
    def open(self) -> list[LogRecord]:
        """Fence earlier instances, then return every committed record for replay."""

    @abstractmethod
    def append(self, records: Sequence[LogRecord]) -> None:
        """Make ``records`` durable, atomically."""

    def confirm_owner(self) -> None:
        """Raise :class:`CoordinatorFenced` if a newer instance owns the log (a write that reaches the fence)."""
        self.append(())

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources. Appending after close is an error."""

    @property
    def description(self) -> str:
        """Where the log lives, for logs and errors."""
        return type(self).__name__
