"""Load a micro-batch's staged files into the rows each binding writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from onceflow.core.contract import SinkBinding, SinkMode
from onceflow.core.staging import StagedFile, read_staged

_INDEX = "__onceflow_row"


@dataclass(frozen=True)
class BoundRows:
    """The rows one binding writes for one transaction: its output's rows, as the sink stores them."""

    binding: SinkBinding
    rows: pa.Table


def output_rows(files: Sequence[StagedFile], binding: SinkBinding) -> pa.Table:
    """Every row of ``binding``'s output in ``files`` (each verified, see :func:`read_staged`).

    For an upsert binding of a table the rows are update-mode results: a later row for a key replaces an earlier
    one (file order, then row order), just as a later batch's row replaces the stored one. The result
    is then sorted by key, so sinks that lock rows do so in one global order. Append rows stay as
    they are, in file order, and so do a topic's (its ``keys`` are the record key, not a row identity).
    """
    tables = [read_staged(f) for f in files if f.output == binding.output]
    if not tables:
        schema = binding.schema if binding.schema is not None else pa.schema([])
        return schema.empty_table()
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    if binding.table and binding.mode is SinkMode.UPSERT and binding.keys and table.num_rows:
        return last_row_per_key(table, binding.keys)
    return table


def last_row_per_key(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The last row of each key of ``table``, sorted by key."""
    indexed = table.append_column(_INDEX, pa.array(range(table.num_rows), pa.int64()))
    last = indexed.group_by(list(keys), use_threads=False).aggregate([(_INDEX, "max")])
    picked = table.take(last.column(f"{_INDEX}_max"))
    return picked.sort_by([(key, "ascending") for key in keys])


def load_outputs(files: Sequence[StagedFile], bindings: Sequence[SinkBinding]) -> list[BoundRows]:
    """The rows of every binding, in binding order."""
    return [BoundRows(binding, output_rows(files, binding)) for binding in bindings]
