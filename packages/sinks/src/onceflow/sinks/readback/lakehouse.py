"""Read bindings back from Delta Lake and Iceberg tables: the rows of each table's current version."""

from __future__ import annotations

from typing import Any

from onceflow.contract import Shard, SinkBinding
from onceflow.sinks.lakehouse.format import TableFormat
from onceflow.sinks.readback.base import NO_BATCH, BindingReader, Row


class LakehouseReader(BindingReader):
    """The tables of one lakehouse sink, read through its :class:`TableFormat` (never written)."""

    def __init__(
        self, name: str, table_format: TableFormat[Any], tables: list[str] | None = None, *, shards: int = 1
    ) -> None:
        super().__init__(name, shards=shards)
        self.format = table_format
        self._tables = tables

    def rows(self, binding: SinkBinding) -> list[Row]:
        """The binding's columns of every row of its table's current version (none when it is missing)."""
        held = self.format.read(binding.table)
        if held is None:
            return []
        names = list(binding.schema.names) if binding.schema is not None else held.column_names
        rows: list[Row] = held.select(names).to_pylist()
        return rows

    def tables(self) -> list[str]:
        """The sink's tables (given, else every table it holds)."""
        return self._tables if self._tables is not None else self.format.tables()

    def last_committed(self, job: str) -> int:
        """The highest batch of ``job`` the sink's tables hold (of every shard: each records its own,
        under the application id ``<job>#<index>``)."""
        tables = self.tables()
        last = {}
        for shard in range(self.shards):
            app_id = Shard(shard, self.shards).record_name(job)
            last[Shard(shard, self.shards).record_name(self.name)] = max(
                (self.format.last_committed(table, app_id) for table in tables), default=NO_BATCH
            )
        return self.whole(last)

    def close(self) -> None:
        self.format.close()

    def __enter__(self) -> LakehouseReader:
        return self
