"""The results store contract: stored tables' rows and the consumed offsets, committed together."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from onceflow.consumer.model import StoredOffset
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

    Extensions read their own tables with :meth:`select` (the store's SQL, ``?`` placeholders) and
    index them with :meth:`create_index`.
    """

    #: A human-readable location (file path or database), for logs.
    description: str = ""

    @abc.abstractmethod
    def create_schema(self) -> None:
        """Create the store's own tables (``consumer_offsets``, ``consumer_tables``) if they do not exist."""

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
    def select(self, query: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """The rows of one read-only SQL query (``?`` placeholders) over the stored tables."""

    @abc.abstractmethod
    def create_index(self, name: str, table: str, columns: Sequence[str]) -> None:
        """Create the index ``name`` on ``columns`` of ``table`` if it does not exist."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection. Idempotent."""
