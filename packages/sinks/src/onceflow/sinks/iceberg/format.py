"""Apache Iceberg tables through pyiceberg: data files written first, one snapshot per batch."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationException,
)
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, In
from pyiceberg.io.pyarrow import (
    ArrowScan,
    _check_pyarrow_schema_compatible,
    _dataframe_to_data_files,
    parquet_file_to_data_file,
    schema_to_pyarrow,
)
from pyiceberg.manifest import DataFile as IcebergDataFile
from pyiceberg.table import Table, TableProperties, Transaction
from sqlalchemy.exc import SQLAlchemyError

from onceflow.contract import SinkBinding, SinkMode, TransactionId
from onceflow.sinks.exceptions import PrepareRejected
from onceflow.sinks.lakehouse.exceptions import CommitConflict, TableStoreUnavailable
from onceflow.sinks.lakehouse.format import NO_BATCH, DataFile, TableCommit, TableFormat
from onceflow.sinks.lakehouse.storage import TableStore
from onceflow.sinks.lakehouse.types import ICEBERG
from onceflow.sinks.tables import Column

#: Snapshot summary entries of every onceflow commit.
TXN_SUMMARY: Final = "onceflow.txn"
SINK_SUMMARY: Final = "onceflow.sink"
APP_SUMMARY: Final = "onceflow.app"


def batch_property(app_id: str) -> str:
    """The table property holding ``app_id``'s (a job's, a shard's ``<job>#<index>``) last committed
    batch (it outlives expired snapshots)."""
    return f"onceflow.last-batch.{app_id}"


def _any_of(column: str, values: list[Any]) -> BooleanExpression:
    """``column IN values`` (pyiceberg's ``In``; mypy reads its pydantic-generated signature wrongly)."""
    predicate: Any = In
    return cast(BooleanExpression, predicate(column, values))


def _without_library_retries(table: Table) -> Table:
    """``table`` as a commit sees it, with pyiceberg's own commit retries off.

    pyiceberg re-applies a failed transaction on the refreshed table by itself; that would rebase a
    batch over a racing commit of the same batch without looking at ``onceflow.last-batch.<job>``.
    The participant retries instead, after reading the table again. Only this in-memory view
    changes: the table's stored ``commit.retry.*`` properties stay as they are for other writers.
    """
    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    metadata = table.metadata.model_copy(update={"properties": properties})
    return Table(table.name(), metadata, table.metadata_location, table.io, table.catalog)


@contextmanager
def _catalog_errors(what: str, store: TableStore) -> Iterator[None]:
    """Catalog database and object store failures as :class:`TableStoreUnavailable` naming the table
    (never a credential)."""
    try:
        yield
    except (SQLAlchemyError, OSError) as exc:
        raise TableStoreUnavailable(what, store.redact(f"Iceberg table {what}: {exc}")) from exc


class IcebergFormat(TableFormat[Table]):
    """Iceberg tables of one namespace of a SQL catalog, their files under one :class:`TableStore` root.

    - A prepared batch is Parquet data files under the table's ``data/`` that no snapshot lists.
    - Append commits ONE snapshot (``append``) adding the files; upsert commits ONE snapshot
      (``overwrite``): the data files holding any of the batch's keys are rewritten without those
      rows (copy-on-write), and the rewritten and the prepared files are added in it.
    - The snapshot's summary carries ``onceflow.txn`` = ``<job>:<batch>``, and the same metadata
      commit sets the table property ``onceflow.last-batch.<job>`` (which survives snapshot
      expiry); the commit asserts the branch's snapshot, so a concurrent commit of any writer
      fails it (:class:`CommitConflict`) and the participant re-reads before trying again.
    - Upsert keys are the table's identifier fields.
    """

    kind = "iceberg"
    title = "Iceberg"
    dialect = ICEBERG

    def __init__(self, sink: str, catalog: SqlCatalog, namespace: str, store: TableStore) -> None:
        self.sink = sink
        self.catalog = catalog
        self.namespace = namespace
        self.store = store

    def address(self, table: str) -> str:
        return f"{self.namespace}.{table}"

    def open(self, table: str) -> Table | None:
        with _catalog_errors(self.address(table), self.store):
            try:
                return self.catalog.load_table((self.namespace, table))
            except NoSuchTableError:
                return None

    def partitioned(self, found: Table) -> bool:
        return not found.spec().is_unpartitioned()

    def columns(self, found: Table) -> tuple[list[Column], list[str]]:
        schema = found.schema()
        columns = [Column(f.name, str(f.field_type), f.required) for f in schema.fields]
        return columns, sorted(schema.identifier_field_names())

    def create(self, binding: SinkBinding) -> None:
        assert binding.schema is not None
        upsert = binding.mode is SinkMode.UPSERT
        fields = []
        for field in binding.schema:
            kind = field.type
            if pa.types.is_timestamp(kind) and kind.tz:
                kind = pa.timestamp("us", tz="UTC")  # Iceberg's timestamptz is UTC
            nullable = field.nullable and not (upsert and field.name in binding.keys)
            fields.append(pa.field(field.name, kind, nullable=nullable))
        location = self.store.table_uri(f"{self.namespace}/{binding.table}")
        if self.store.is_local:
            location = f"file://{location}"
        with _catalog_errors(self.address(binding.table), self.store):
            try:
                with self.catalog.create_table_transaction(
                    (self.namespace, binding.table),
                    schema=pa.schema(fields),
                    location=location,
                    properties={"onceflow.sink": self.sink, "onceflow.output": binding.output},
                ) as creation:
                    if upsert:
                        with creation.update_schema() as update:
                            update.set_identifier_fields(*binding.keys)
            except TableAlreadyExistsError:
                pass  # another participant created it first: ensure() checks it next time

    def add_columns(self, binding: SinkBinding, names: Sequence[str]) -> None:
        assert binding.schema is not None
        found = self.open(binding.table)
        assert found is not None
        added = pa.schema([binding.schema.field(name).with_nullable(True).remove_metadata() for name in names])
        with _catalog_errors(self.address(binding.table), self.store), found.update_schema() as update:
            update.union_by_name(added)

    def batch_in(self, found: Table, app_id: str) -> int:
        return int(found.properties.get(batch_property(app_id), NO_BATCH))

    @staticmethod
    def _fit(rows: pa.Table, table: Table) -> pa.Table:
        schema = schema_to_pyarrow(table.schema(), include_field_ids=False)
        return rows.cast(pa.schema([schema.field(name) for name in rows.column_names]))

    def write(self, binding: SinkBinding, rows: pa.Table, txn: TransactionId) -> list[DataFile]:
        """The batch's rows as Parquet data files under the table's ``data/`` (none for no rows)."""
        if not rows.num_rows:
            return []
        table = self.existing(binding.table)
        try:
            rows = self._fit(rows, table)
            _check_pyarrow_schema_compatible(table.schema(), rows.schema, format_version=table.format_version)
        except (ValueError, TypeError, pa.ArrowInvalid) as exc:
            problem = f"rows do not fit Iceberg table {binding.table!r}: {exc}"
            raise PrepareRejected(f"sink {self.sink!r}: {problem}") from exc
        with _catalog_errors(self.address(binding.table), self.store):
            written = list(_dataframe_to_data_files(table.metadata, rows, table.io, write_uuid=uuid.uuid4()))
        for data_file in written:
            self.store.make_durable(data_file.file_path)
        return [DataFile(data_file.file_path) for data_file in written]

    def commit_on(self, table: Table, pending: TableCommit) -> None:
        """One metadata commit on ``table``'s snapshot: the batch's snapshot and the job's last-batch property."""
        binding, txn, files, app_id = pending.binding, pending.txn, pending.files, pending.app_id
        pending.before_commit()
        summary = {TXN_SUMMARY: str(txn), SINK_SUMMARY: self.sink, APP_SUMMARY: app_id}
        rewritten: list[str] = []
        try:
            with _catalog_errors(self.address(binding.table), self.store):
                update = _without_library_retries(table).transaction()
                update.set_properties({batch_property(app_id): str(txn.batch)})
                if binding.mode is SinkMode.UPSERT and files:
                    rewritten = self._overwrite(table, update, binding, files, summary)
                else:
                    with update.update_snapshot(snapshot_properties=summary).fast_append() as append:
                        for file in files:
                            append.append_data_file(self._data_file(table, update, file))
                update.commit_transaction()
        except (CommitFailedException, ValidationException) as exc:
            for uri in rewritten:
                self.store.delete(uri)
            raise CommitConflict(binding.table, f"Iceberg table {binding.table!r}, {txn}: {exc}") from exc

    @staticmethod
    def _data_file(table: Table, update: Transaction, file: DataFile) -> IcebergDataFile:
        """The Iceberg manifest entry of a prepared file, its statistics read from the Parquet footer."""
        return parquet_file_to_data_file(table.io, update.table_metadata, file.uri)

    def _overwrite(
        self,
        table: Table,
        update: Transaction,
        binding: SinkBinding,
        files: Sequence[DataFile],
        summary: dict[str, str],
    ) -> list[str]:
        """Copy-on-write upsert in one ``overwrite`` snapshot; returns the rewritten files' URIs.

        Steps:
            1. Read the batch's rows and their keys from the prepared files.
            2. Plan the data files that may hold one of the keys (pruned on the first key column).
            3. Each file that holds one is rewritten without those rows, and deleted from the table.
            4. Add the rewritten files and the prepared files.
        """
        # Step 1
        parts = [self.store.read_parquet(f.uri) for f in files]
        batch = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        keys = list(binding.keys)
        batch_keys = set(zip(*(batch.column(k).to_pylist() for k in keys), strict=True))
        # Step 2
        first = batch.column(keys[0]).unique().to_pylist()
        tasks = list(table.scan(row_filter=_any_of(keys[0], first)).plan_files())
        rewritten: list[str] = []
        with update.update_snapshot(snapshot_properties=summary).overwrite() as overwrite:
            for task in tasks:
                if task.delete_files:
                    problem = f"data file {task.file.file_path} has delete files, which are not rewritten here"
                    raise TableStoreUnavailable(self.address(binding.table), problem)
                # Step 3
                held = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue()).to_table([task])
                held_keys = zip(*(held.column(k).to_pylist() for k in keys), strict=True)
                replaced = pa.array([key in batch_keys for key in held_keys], pa.bool_())
                if not pc.any(replaced).as_py():
                    continue
                overwrite.delete_data_file(task.file)
                kept = held.filter(pc.invert(replaced))
                if kept.num_rows:
                    for data_file in _dataframe_to_data_files(update.table_metadata, kept, table.io):
                        rewritten.append(data_file.file_path)
                        overwrite.append_data_file(data_file)
            # Step 4
            for file in files:
                overwrite.append_data_file(self._data_file(table, update, file))
        return rewritten

    def cleanup(self, binding: SinkBinding, files: Sequence[DataFile], *, committed: bool) -> None:
        """After a commit every prepared file is in the table; after an abort every one goes."""
        if committed:
            return
        for file in files:
            self.store.delete(file.uri)

    def read(self, table: str, version: int | None = None) -> pa.Table | None:
        """The rows of the table's current snapshot (or the snapshot whose id is ``version``), through
        pyiceberg's scan."""
        found = self.open(table)
        if found is None:
            return None
        with _catalog_errors(self.address(table), self.store):
            return found.scan(snapshot_id=version).to_arrow()

    def tables(self) -> list[str]:
        with _catalog_errors(self.namespace, self.store):
            return sorted(name for _, name in self.catalog.list_tables(self.namespace))

    def history(self, table: str) -> list[tuple[int, str | None]]:
        found = self.open(table)
        if found is None:
            return []
        snapshots = sorted(found.snapshots(), key=lambda s: (s.sequence_number or 0, s.timestamp_ms))
        return [(s.snapshot_id, s.summary.get(TXN_SUMMARY) if s.summary else None) for s in snapshots]

    def commits(self, table: str) -> list[tuple[str, str, str]]:
        found = self.open(table)
        if found is None:
            return []
        summaries = [s.summary for s in found.snapshots() if s.summary]
        fields = [(s.get(SINK_SUMMARY), s.get(APP_SUMMARY), s.get(TXN_SUMMARY)) for s in summaries]
        return [(sink, app, txn) for sink, app, txn in fields if sink and app and txn]

    def close(self) -> None:
        self.catalog.engine.dispose()
