"""The results store contract: stored tables' rows and the consumed offsets, committed together."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from onceflow.consumer.model import ResultRow, StoredOffset
from onceflow.consumer.tables import StoredTable

#: One row of a stored table: column name -> Python value of the column's Arrow type.
Row = dict[str, Any]


@dataclass(frozen=True)
class TableRow:
    """One consumed record as a row of its stored table; ``schema`` is the row's own (its writer schema)."""

    table: StoredTable
    row: Row
    schema: pa.Schema


@dataclass(frozen=True)
class PartitionBatch:
    """What one poll batch read from one partition of a stored topic.

    ``expected_offset`` is the stored next offset the batch continues from (None: the store has no
    offset for the partition yet); ``next_offset`` is the offset after the batch's last record;
    ``rows`` are the stored records in offset order (a skipped record moves ``next_offset`` only).
    """

    topic: str
    partition: int
    expected_offset: int | None
    next_offset: int
    rows: tuple[TableRow, ...]


@dataclass(frozen=True)
class ResultBatch:
    """One poll batch of consumer group ``group`` (any of its stored topics), applied by instance ``owner``."""

    group: str
    owner: str
    partitions: tuple[PartitionBatch, ...]

    @property
    def records(self) -> int:
        return sum(len(part.rows) for part in self.partitions)

    def rows(self) -> list[TableRow]:
        return [row for part in self.partitions for row in part.rows]

    def rows_by_table(self) -> dict[str, list[Row]]:
        """The batch's rows per table name, in offset order per partition."""
        found: dict[str, list[Row]] = {}
        for row in self.rows():
            found.setdefault(row.table.table, []).append(row.row)
        return found


class ResultsStore(abc.ABC):
    """Where the consumer keeps its stored tables and the offsets it consumed them up to.

    The contract every implementation keeps:

    - :meth:`apply` is atomic: the batch's rows and its partitions' offsets are committed in one
      database transaction, or nothing is. A crash at any moment leaves every table exactly as of
      the stored offsets, so re-reading from them neither loses nor repeats a record, in append
      tables too.
    - :meth:`apply` is a compare-and-set on the offsets: a partition whose stored offset is no
      longer ``expected_offset`` (another instance applied it meanwhile) makes it raise
      :class:`~onceflow.consumer.exceptions.StaleOffsets` and roll the whole batch back.
    - Upsert tables: a later record for a key replaces the stored row (last write wins); append
      tables: every record is one row.
    - :meth:`prepare_table` creates or extends a table for a schema, or raises
      :class:`~onceflow.sinks.exceptions.BindingRejected` naming the mismatch (the sinks' rules).
    - Every method is safe to call from several threads; several stores (processes) may share one
      database.

    The IP-count views (:meth:`counts_for_ip`, :meth:`top_ips`, ...) read the ``results`` table.
    """

    #: A human-readable location (file path or database), for logs.
    description: str = ""

    @abc.abstractmethod
    def create_schema(self) -> None:
        """Create the store's own tables (``consumer_offsets``, ``consumer_tables``) and the IP-count
        table ``results`` if they do not exist."""

    @abc.abstractmethod
    def stored_offsets(self, group: str, topic: str) -> dict[int, StoredOffset]:
        """The stored offsets of ``group`` on ``topic``, by partition (partitions never applied are absent)."""

    @abc.abstractmethod
    def apply(self, batch: ResultBatch) -> None:
        """Commit ``batch``'s rows and offsets in one transaction (see the class contract)."""

    @abc.abstractmethod
    def prepare_table(self, table: StoredTable, schema: pa.Schema) -> None:
        """Make ``table`` able to store rows of ``schema``: create it, or add the nullable columns it
        lacks, and remember the table's columns; idempotent."""

    @abc.abstractmethod
    def table_schemas(self) -> dict[str, pa.Schema]:
        """The columns of every stored table created so far, by table name."""

    @abc.abstractmethod
    def table_rows(
        self, table: StoredTable, schema: pa.Schema, limit: int, after: Sequence[Any] | None
    ) -> list[tuple[tuple[Any, ...], Row]]:
        """Up to ``limit`` rows of ``table`` after the position ``after`` (None: from the first), each
        with its position: the key values of an upsert table (rows in key order), the insertion
        sequence of an append table (rows in insertion order)."""

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
        """Every IP-count row, sorted by window then ip (for audits)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection. Idempotent."""
