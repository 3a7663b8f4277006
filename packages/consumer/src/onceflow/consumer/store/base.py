"""The results store contract: results and consumed offsets, committed together."""

from __future__ import annotations

import abc
from dataclasses import dataclass

from onceflow.consumer.model import ResultRow, StoredOffset


@dataclass(frozen=True)
class PartitionBatch:
    """What one poll batch read from one partition.

    ``expected_offset`` is the stored next offset the batch continues from (None: the store has no
    offset for the partition yet); ``next_offset`` is the offset after the batch's last record;
    ``rows`` are the decoded records in offset order.
    """

    partition: int
    expected_offset: int | None
    next_offset: int
    rows: tuple[ResultRow, ...]


@dataclass(frozen=True)
class ResultBatch:
    """One poll batch of consumer group ``group`` on ``topic``, applied by instance ``owner``."""

    group: str
    topic: str
    owner: str
    partitions: tuple[PartitionBatch, ...]

    @property
    def records(self) -> int:
        return sum(len(part.rows) for part in self.partitions)

    def rows(self) -> list[ResultRow]:
        return [row for part in self.partitions for row in part.rows]


class ResultsStore(abc.ABC):
    """Where the consumer keeps results and the offsets it consumed them up to.

    The contract every implementation keeps:

    - :meth:`apply` is atomic: the batch's rows and its partitions' offsets are committed in one
      database transaction, or nothing is. A crash at any moment leaves the results exactly as of
      the stored offsets, so re-reading from them neither loses nor repeats a record.
    - :meth:`apply` is a compare-and-set on the offsets: a partition whose stored offset is no
      longer ``expected_offset`` (another instance applied it meanwhile) makes it raise
      :class:`~onceflow.consumer.exceptions.StaleOffsets` and roll the whole batch back.
    - Rows are upserted by ``(window_start, ip)``: a later record for a key replaces the stored row
      (the Kafka sink emits updated counts in update mode; last write wins).
    - Every method is safe to call from several threads; several stores (processes) may share one
      database.
    """

    #: A human-readable location (file path or database), for logs.
    description: str = ""

    @abc.abstractmethod
    def create_schema(self) -> None:
        """Create the tables (``results``, ``consumer_offsets``) if they do not exist."""

    @abc.abstractmethod
    def stored_offsets(self, group: str, topic: str) -> dict[int, StoredOffset]:
        """The stored offsets of ``group`` on ``topic``, by partition (partitions never applied are absent)."""

    @abc.abstractmethod
    def apply(self, batch: ResultBatch) -> None:
        """Commit ``batch``'s rows and offsets in one transaction (see the class contract)."""

    @abc.abstractmethod
    def counts_for_ip(self, ip: str, window_start_from: int, window_start_to: int | None) -> list[ResultRow]:
        """Rows of ``ip`` whose window starts in ``[from, to)`` (``to`` None: no upper bound), by window."""

    @abc.abstractmethod
    def top_ips(self, window_start: int, limit: int) -> list[ResultRow]:
        """The ``limit`` rows of one window with the highest counts, ties broken by ip."""

    @abc.abstractmethod
    def latest_window_start(self) -> int | None:
        """The start of the newest window in the store, or None when it is empty."""

    @abc.abstractmethod
    def latest_window_start_ending_by(self, end_limit: int) -> int | None:
        """The start of the newest window whose ``window_end <= end_limit``, or None."""

    @abc.abstractmethod
    def all_results(self) -> list[ResultRow]:
        """Every row, sorted by window then ip (for audits)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection. Idempotent."""
