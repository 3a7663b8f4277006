"""Read bindings back from Delta Lake and Iceberg tables: the rows of each table's current version."""

from __future__ import annotations

from onceflow.core.contract import SinkBinding
from onceflow.core.contract.ip_count import ip_count_table_binding
from onceflow.sinks.lakehouse.format import TableFormat
from onceflow.sinks.readback.base import NO_BATCH, BindingReader, Row


class LakehouseReader(BindingReader):
    """The tables of one lakehouse sink, read through its :class:`TableFormat` (never written)."""

    def __init__(self, name: str, table_format: TableFormat, tables: list[str] | None = None) -> None:
        super().__init__(name)
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

    def default_binding(self) -> SinkBinding:
        return ip_count_table_binding(self.name)

    def tables(self) -> list[str]:
        """The sink's tables (given, else every table it holds)."""
        return self._tables if self._tables is not None else self.format.tables()

    def last_committed(self, job: str) -> int:
        """The highest batch of ``job`` any of the sink's tables holds."""
        return max((self.format.last_committed(table, job) for table in self.tables()), default=NO_BATCH)

    def close(self) -> None:
        self.format.close()

    def __enter__(self) -> LakehouseReader:
        return self
