"""Load a micro-batch's staged files into the rows each binding writes."""

from __future__ import annotations

import array
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from onceflow.contract import SinkBinding, SinkMode
from onceflow.contract.staging import StagedFile, read_staged


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
    """The last row of each key of ``table``, sorted by key.

    The row numbers are collected in Python and handed to Arrow as a buffer: pyarrow's
    conversions of Python objects and its ``group_by`` import pandas on first use, which costs a
    participant's first prepare after every start more than a second.
    """
    last: dict[tuple[object, ...], int] = {}
    for row, key in enumerate(zip(*(table.column(name).to_pylist() for name in keys), strict=True)):
        last[key] = row
    rows = array.array("q", last.values())
    picked = table.take(pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(rows)]))
    return picked.sort_by([(key, "ascending") for key in keys])


def load_outputs(files: Sequence[StagedFile], bindings: Sequence[SinkBinding]) -> list[BoundRows]:
    """The rows of every binding, in binding order."""
    return [BoundRows(binding, output_rows(files, binding)) for binding in bindings]
