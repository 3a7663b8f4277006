"""The extension point of the lakehouse sinks: one open table format (Delta Lake, Apache Iceberg)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Generic, TypeVar

import pyarrow as pa

from onceflow.contract import SinkBinding, TransactionId
from onceflow.sinks.exceptions import BindingRejected
from onceflow.sinks.lakehouse.exceptions import TableStoreUnavailable
from onceflow.sinks.tables import Column, TablePlan, plan_table
from onceflow.sinks.tables.dialects import Dialect

#: What :meth:`TableFormat.last_committed` answers for a job that committed nothing to a table.
NO_BATCH: Final = -1

#: A format's handle on one version of a table (a ``DeltaTable``, an Iceberg ``Table``).
TableT = TypeVar("TableT")


@dataclass(frozen=True)
class DataFile:
    """A data file a prepare wrote: its URI, and what the format needs to commit it without reading it
    again (its size and the Delta statistics; empty when the format reads its footer)."""

    uri: str
    size: int = 0
    stats: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> DataFile:
        return cls(uri=str(doc["uri"]), size=int(doc.get("size", 0)), stats=str(doc.get("stats", "")))


@dataclass(frozen=True, slots=True)
class TableCommit:
    """One pending table commit: the prepared ``files`` of ``binding.table`` for ``txn``, recorded in
    the table for ``app_id`` (the job, or a shard's ``<job>#<index>``). ``before_commit()`` runs once
    the format has read what it needs from the files, right before it commits (a test's fault point)."""

    binding: SinkBinding
    txn: TransactionId
    files: Sequence[DataFile]
    app_id: str
    before_commit: Callable[[], None] = lambda: None


class TableFormat(abc.ABC, Generic[TableT]):
    """A table format as :class:`~onceflow.sinks.lakehouse.participant.LakehouseParticipant` drives it.

    The contract:

    - :meth:`write` makes a batch's rows durable as data files that the table does not reference
      yet (no reader sees them), and returns their URIs.
    - :meth:`commit` is ONE atomic table commit that makes the files' rows visible and records
      ``(app_id, batch)`` in the table itself (Delta's application transaction, an Iceberg snapshot
      summary and table property; ``app_id`` is the job, or ``<job>#<index>`` for a shard of the
      sink), so :meth:`last_committed` reads it back. It raises
      :class:`~onceflow.sinks.lakehouse.exceptions.CommitConflict` when another writer won a race;
      the caller commits again (which re-reads the table first).
    - :meth:`cleanup` deletes those of a transaction's files that the table does not reference
      after a commit (a merge's source files) or after an abort (all of them).
    - Every method is safe to call from several threads; tables are addressed by name.
    """

    #: The ``kind`` of the sink in a participant config.
    kind: str
    #: The format's column types, for :func:`~onceflow.sinks.tables.plan_table`.
    dialect: Dialect
    #: The format's name in errors ("Delta", "Iceberg").
    title: str
    #: The sink's name, as errors name it.
    sink: str

    @abc.abstractmethod
    def open(self, table: str) -> TableT | None:
        """The table's latest version, or None when there is no such table."""

    @abc.abstractmethod
    def address(self, table: str) -> str:
        """Where the table is, as errors name it: its URI (Delta) or its catalog name (Iceberg)."""

    @abc.abstractmethod
    def batch_in(self, found: TableT, app_id: str) -> int:
        """The highest batch ``app_id`` committed that this version of the table records, or :data:`NO_BATCH`."""

    def existing(self, table: str) -> TableT:
        """The table's latest version; :class:`TableStoreUnavailable` when there is no such table."""
        found = self.open(table)
        if found is None:
            raise TableStoreUnavailable(self.address(table), f"{self.title} table {table!r} does not exist")
        return found

    def describe(self, table: str) -> tuple[list[Column] | None, list[str]]:
        """The table's columns and its key columns, or ``(None, [])`` when there is no such table;
        :class:`~onceflow.sinks.exceptions.BindingRejected` for a partitioned table."""
        found = self.open(table)
        if found is None:
            return None, []
        if self.partitioned(found):
            raise BindingRejected(self.sink, f"table {table!r}", f"partitioned {self.title} tables are not supported")
        return self.columns(found)

    @abc.abstractmethod
    def partitioned(self, found: TableT) -> bool:
        """Whether this version of the table is partitioned (the sinks write unpartitioned tables only)."""

    @abc.abstractmethod
    def columns(self, found: TableT) -> tuple[list[Column], list[str]]:
        """This version of the table's columns and its key columns, for :meth:`describe`."""

    @abc.abstractmethod
    def create(self, binding: SinkBinding) -> None:
        """Create ``binding.table`` from the binding's schema (the upsert keys NOT NULL, recorded as its keys)."""

    @abc.abstractmethod
    def add_columns(self, binding: SinkBinding, names: Sequence[str]) -> None:
        """Add the nullable columns ``names`` of the binding's schema to the table."""

    def ensure(self, sink: str, binding: SinkBinding) -> TablePlan:
        """Make ``binding.table`` fit the binding, or raise :class:`~onceflow.sinks.exceptions.BindingRejected`.

        Steps:
            1. Describe the table as it is.
            2. Plan with the SQL sinks' rules (:func:`plan_table`): create, add nullable columns, or refuse.
            3. Create the table, or add the columns.
        """
        # Step 1
        existing, keys = self.describe(binding.table)
        # Step 2
        plan = plan_table(self.dialect, sink, binding, existing, keys)
        # Step 3
        if plan.created:
            self.create(binding)
        elif plan.added:
            self.add_columns(binding, plan.added)
        return plan

    def last_committed(self, table: str, app_id: str) -> int:
        """The highest batch ``app_id`` (a job, or a shard's ``<job>#<index>``) committed to ``table``,
        or :data:`NO_BATCH`."""
        found = self.open(table)
        return NO_BATCH if found is None else self.batch_in(found, app_id)

    @abc.abstractmethod
    def write(self, binding: SinkBinding, rows: pa.Table, txn: TransactionId) -> list[DataFile]:
        """Write ``rows`` durably as data files of ``binding.table`` that no table version references yet."""

    def commit(self, pending: TableCommit) -> bool:
        """One table commit of ``pending.files`` (append, or a merge on the keys for upsert) recording
        ``pending.txn.batch`` for ``pending.app_id``.

        Steps:
            1. Load the table's latest version.
            2. That version holds the batch (or a later batch) of ``app_id``: return False, nothing written.
            3. :meth:`commit_on`: read what the commit needs from the prepared files (an upsert's
               merge source: a racing commit of the same batch deletes those files), then
               ``before_commit()`` (a test's fault point), then commit on top of exactly that
               version: a commit of another writer since then is a :class:`CommitConflict`.
            4. Return True.
        """
        # Step 1
        found = self.existing(pending.binding.table)
        # Step 2
        if self.batch_in(found, pending.app_id) >= pending.txn.batch:
            return False
        # Step 3
        self.commit_on(found, pending)
        # Step 4
        return True

    @abc.abstractmethod
    def commit_on(self, found: TableT, pending: TableCommit) -> None:
        """Step 3 of :meth:`commit`: one table commit on top of ``found`` (the version Step 1 loaded),
        calling ``pending.before_commit()`` once the prepared files are read, right before committing."""

    @abc.abstractmethod
    def cleanup(self, binding: SinkBinding, files: Sequence[DataFile], *, committed: bool) -> None:
        """Delete the files of ``files`` that the table does not reference (committed or aborted)."""

    @abc.abstractmethod
    def read(self, table: str, version: int | None = None) -> pa.Table | None:
        """Every row of the table's current version, or of ``version`` (a Delta version, an Iceberg
        snapshot id: see :meth:`history`); None when there is no such table."""

    @abc.abstractmethod
    def tables(self) -> list[str]:
        """The names of the tables the sink holds, sorted."""

    @abc.abstractmethod
    def history(self, table: str) -> list[tuple[int, str | None]]:
        """Every version (Delta) or snapshot (Iceberg) of the table, oldest first, with the
        ``<job>:<batch>`` it committed (None: a version onceflow did not commit, say a schema change)."""

    @abc.abstractmethod
    def commits(self, table: str) -> list[tuple[str, str, str]]:
        """``(sink, app_id, "<job>:<batch>")`` of every commit onceflow made to the table that the
        table still keeps (its retained versions or snapshots)."""

    def close(self) -> None:
        """Release clients and connections."""
