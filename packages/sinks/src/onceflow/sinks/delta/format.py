"""Delta Lake tables through delta-rs (the ``deltalake`` binding): files outside the log, one commit each."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Final
from urllib.parse import unquote

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field, Schema, Transaction
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, RemoveAction

from onceflow.contract import SinkBinding, SinkMode, TransactionId
from onceflow.sinks.delta.stats import file_stats
from onceflow.sinks.lakehouse.exceptions import CommitConflict, TableStoreUnavailable
from onceflow.sinks.lakehouse.format import NO_BATCH, DataFile, TableCommit, TableFormat
from onceflow.sinks.lakehouse.storage import TableStore
from onceflow.sinks.lakehouse.types import DELTA
from onceflow.sinks.tables import Column

#: Field metadata marking an upsert key column (its value: the column's position in the key).
KEY_METADATA: Final = "onceflow.key"
#: commitInfo entries of every onceflow commit (``delta.history()`` shows them).
TXN_METADATA: Final = "onceflow.txn"
SINK_METADATA: Final = "onceflow.sink"
APP_METADATA: Final = "onceflow.app"


@contextmanager
def _storage_errors(uri: str, store: TableStore) -> Iterator[None]:
    """delta-rs and pyarrow failures of the object store as :class:`TableStoreUnavailable` naming the
    table (never a credential)."""
    try:
        yield
    except CommitFailedError:
        raise
    except (DeltaError, OSError) as exc:
        raise TableStoreUnavailable(uri, store.redact(f"Delta table {uri}: {exc}")) from exc


class DeltaFormat(TableFormat[DeltaTable]):
    """Delta Lake tables under one :class:`TableStore` root.

    - A prepared batch is Parquet files at the table's root, named ``onceflow-<batch>-<uuid>.parquet``,
      that no log entry adds; Delta readers only see files the log adds, and ``vacuum`` removes
      orphans older than its retention.
    - Append commits one log entry with an ``add`` per file, the ``txn`` action (``appId`` = the
      job, or ``<job>#<index>`` for a shard; ``version`` = the batch) and commitInfo
      ``onceflow.txn`` = ``<job>:<batch>``.
    - Upsert commits one MERGE on the key columns (``WHEN MATCHED UPDATE * WHEN NOT MATCHED
      INSERT *``) from the prepared files, with the same ``txn`` action; the files themselves are
      deleted afterwards (the merge wrote its own).
    - Key columns carry the field metadata ``onceflow.key`` (Delta has no primary key).
    - A commit that loses a race is a :class:`CommitConflict`; delta-rs itself retries a blind
      append over a concurrent one, and refuses a concurrent ``txn`` of the same application id.
    """

    kind = "delta"
    dialect = DELTA
    title = "Delta"

    def __init__(self, sink: str, store: TableStore) -> None:
        self.sink = sink
        self.store = store
        self._options = store.delta_storage_options()

    def address(self, table: str) -> str:
        return self.store.table_uri(table)

    def open(self, table: str, version: int | None = None) -> DeltaTable | None:
        """The table (at ``version``, else the latest), or None when it does not exist."""
        uri = self.address(table)
        with _storage_errors(uri, self.store):
            try:
                return DeltaTable(uri, version=version, storage_options=self._options)
            except TableNotFoundError:
                return None

    def partitioned(self, found: DeltaTable) -> bool:
        return bool(found.metadata().partition_columns)

    def columns(self, found: DeltaTable) -> tuple[list[Column], list[str]]:
        columns, keys = [], {}
        for field in found.schema().fields:
            columns.append(Column(field.name, str(getattr(field.type, "type", field.type)), not field.nullable))
            if KEY_METADATA in field.metadata:
                keys[int(field.metadata[KEY_METADATA])] = field.name
        return columns, [keys[i] for i in sorted(keys)]

    def create(self, binding: SinkBinding) -> None:
        assert binding.schema is not None
        fields = []
        for field in binding.schema:
            if field.name in binding.keys and binding.mode is SinkMode.UPSERT:
                position = binding.keys.index(field.name)
                fields.append(field.with_nullable(False).with_metadata({KEY_METADATA: str(position)}))
            else:
                fields.append(field.remove_metadata())
        uri = self.address(binding.table)
        with _storage_errors(uri, self.store):
            DeltaTable.create(
                uri,
                schema=pa.schema(fields),
                mode="ignore",  # another participant created it first: ensure() checks it next time
                name=binding.table,
                description=f"onceflow sink {self.sink!r}, output {binding.output!r}",
                storage_options=self._options,
            )

    def add_columns(self, binding: SinkBinding, names: Sequence[str]) -> None:
        assert binding.schema is not None
        delta = self.open(binding.table)
        assert delta is not None
        added = [Schema.from_arrow(pa.schema([binding.schema.field(name)])).fields[0] for name in names]
        with _storage_errors(self.address(binding.table), self.store):
            delta.alter.add_columns([Field(f.name, f.type, nullable=True) for f in added])

    def batch_in(self, found: DeltaTable, app_id: str) -> int:
        version = found.transaction_version(app_id)
        return NO_BATCH if version is None else int(version)

    def _table_schema(self, delta: DeltaTable) -> pa.Schema:
        return pa.schema(delta.schema().to_arrow())

    @staticmethod
    def _fit(rows: pa.Table, schema: pa.Schema) -> pa.Table:
        """``rows`` with each column cast to the table's type of it (a timestamp's unit, large strings, ...)."""
        return rows.cast(pa.schema([schema.field(name).with_metadata(None) for name in rows.column_names]))

    def write(self, binding: SinkBinding, rows: pa.Table, txn: TransactionId) -> list[DataFile]:
        """One Parquet file of the batch's rows at the table's root (none for no rows), with its statistics."""
        if not rows.num_rows:
            return []
        delta = self.existing(binding.table)
        rows = self._fit(rows, self._table_schema(delta))
        uri = self.store.file_uri(binding.table, f"onceflow-{txn.batch}-{uuid.uuid4().hex}.parquet")
        size = self.store.write_parquet(uri, rows)
        return [DataFile(uri, size, file_stats(rows))]

    def _properties(self, txn: TransactionId, app_id: str) -> CommitProperties:
        return CommitProperties(
            custom_metadata={TXN_METADATA: str(txn), SINK_METADATA: self.sink, APP_METADATA: app_id},
            app_transactions=[Transaction(app_id, txn.batch)],
        )

    def commit_on(self, delta: DeltaTable, pending: TableCommit) -> None:
        """One Delta commit on ``delta``: ``add`` actions (append) or a MERGE (upsert), with the ``txn`` action."""
        binding, txn, files, app_id = pending.binding, pending.txn, pending.files, pending.app_id
        uri = self.address(binding.table)
        source = self._merge_source(delta, files) if binding.mode is SinkMode.UPSERT and files else None
        pending.before_commit()
        try:
            with _storage_errors(uri, self.store):
                if source is not None:
                    self._merge(delta, binding, self._properties(txn, app_id), source)
                else:
                    self._append(delta, self._properties(txn, app_id), files)
        except CommitFailedError as exc:
            raise CommitConflict(binding.table, f"Delta table {binding.table!r}, {txn}: {exc}") from exc

    def _append(self, delta: DeltaTable, properties: CommitProperties, files: Sequence[DataFile]) -> None:
        now_ms = int(time.time() * 1000)
        table_root = delta.table_uri.rstrip("/")
        actions: list[AddAction | RemoveAction] = [
            AddAction(_relative(table_root, f.uri), f.size, {}, now_ms, True, f.stats or json.dumps({})) for f in files
        ]
        delta.create_write_transaction(actions, "append", delta.schema(), commit_properties=properties)

    def _merge_source(self, delta: DeltaTable, files: Sequence[DataFile]) -> pa.Table:
        """The batch's rows from its prepared files, in the table's types."""
        tables = [self.store.read_parquet(f.uri) for f in files]
        source = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        return self._fit(source, self._table_schema(delta))

    def _merge(self, delta: DeltaTable, binding: SinkBinding, properties: CommitProperties, source: pa.Table) -> None:
        predicate = " AND ".join(f't."{k}" = s."{k}"' for k in binding.keys)
        merger = delta.merge(source, predicate, source_alias="s", target_alias="t", commit_properties=properties)
        merger.when_matched_update_all().when_not_matched_insert_all().execute()

    def cleanup(self, binding: SinkBinding, files: Sequence[DataFile], *, committed: bool) -> None:
        """After an abort every file goes; after a commit only an upsert's (the merge wrote its own)."""
        if committed and binding.mode is not SinkMode.UPSERT:
            return
        for file in files:
            self.store.delete(file.uri)

    def read(self, table: str, version: int | None = None) -> pa.Table | None:
        """The rows of the table's ``version`` (default: the latest), read from its files with pyarrow."""
        delta = self.open(table, version)
        if delta is None:
            return None
        features = set(delta.protocol().reader_features or ())
        unsupported = features & {"deletionVectors", "columnMapping", "v2Checkpoint"}
        if unsupported:
            raise TableStoreUnavailable(
                self.address(table), f"Delta table {table!r} uses reader features {sorted(unsupported)}, not read here"
            )
        schema = pa.schema([f.remove_metadata() for f in self._table_schema(delta)])
        parts = [_conform(self.store.read_parquet(uri), schema) for uri in delta.file_uris()]
        return pa.concat_tables(parts) if parts else schema.empty_table()

    def tables(self) -> list[str]:
        return [name for name in self.store.tables() if self.open(name) is not None]

    def history(self, table: str) -> list[tuple[int, str | None]]:
        delta = self.open(table)
        if delta is None:
            return []
        return [(version, txn) for version, txn, _, _ in self._entries(delta, table)]

    def commits(self, table: str) -> list[tuple[str, str, str]]:
        delta = self.open(table)
        if delta is None:
            return []
        return [(sink, app, txn) for _, txn, sink, app in self._entries(delta, table) if txn and sink and app]

    def _entries(self, delta: DeltaTable, table: str) -> list[tuple[int, str | None, str | None, str | None]]:
        """Every version with the commitInfo onceflow wrote in it (None where it wrote none), oldest first."""
        with _storage_errors(self.address(table), self.store):
            entries = delta.history()
        found = [(int(e["version"]), e.get(TXN_METADATA), e.get(SINK_METADATA), e.get(APP_METADATA)) for e in entries]
        return sorted(found, key=lambda entry: entry[0])


def _relative(table_root: str, uri: str) -> str:
    """``uri`` relative to the table's root, as a Delta ``add`` action names it."""
    table_root = unquote(table_root)
    if uri.startswith("/") and table_root.startswith("file://"):
        table_root = table_root[len("file://") :]
    if not uri.startswith(table_root + "/"):
        raise ValueError(f"data file {uri} is not under the table {table_root}")
    return uri[len(table_root) + 1 :]


def _conform(part: pa.Table, schema: pa.Schema) -> pa.Table:
    """A data file's rows in the table's schema: its types (delta-rs writes string views), and nulls
    for the columns added after the file was written."""
    columns = [
        part.column(f.name).cast(f.type) if f.name in part.column_names else pa.nulls(part.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)
