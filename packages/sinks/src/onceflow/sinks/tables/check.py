"""An existing table against a binding: what to create, what to add, and what does not fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from onceflow.contract import SinkBinding, SinkMode, check_supported
from onceflow.core.errors import UnsupportedColumnType
from onceflow.sinks.exceptions import BindingRejected
from onceflow.sinks.tables.dialects import Dialect


@dataclass(frozen=True)
class Column:
    """A column of an existing table, as the database describes it."""

    name: str
    type: str
    not_null: bool
    has_default: bool = False


@dataclass(frozen=True)
class TablePlan:
    """The statements that make the table fit the binding (none when it already does)."""

    statements: tuple[str, ...]
    created: bool
    added: tuple[str, ...]


def create_statement(dialect: Dialect, binding: SinkBinding) -> str:
    assert binding.schema is not None
    q = dialect.quote
    columns = []
    for f in binding.schema:
        not_null = "" if f.nullable and f.name not in binding.keys else " NOT NULL"
        columns.append(f"{q(f.name)} {dialect.sql_type(binding.output, f)}{not_null}")
    if binding.mode is SinkMode.UPSERT and binding.keys:
        columns.append(f"PRIMARY KEY ({', '.join(q(k) for k in binding.keys)})")
    return f"CREATE TABLE IF NOT EXISTS {q(binding.table)} ({', '.join(columns)})"


def plan_table(
    dialect: Dialect,
    sink: str,
    binding: SinkBinding,
    existing: Sequence[Column] | None,
    primary_key: Sequence[str],
) -> TablePlan:
    """What to do for ``binding.table`` given the table's ``existing`` columns (None: no such table).

    Steps:
        1. Every output column must have a type the sink stores (else: the column is named).
        2. No table: create it from the schema (with the upsert keys as its primary key).
        3. An existing table: each output column must exist with the same type; a nullable one
           the output gained is added. A table column the output lacks must be nullable or have a
           default. Upsert keys must be the table's primary key.

    Raises :class:`BindingRejected` naming the table, the column and the mismatch.
    """
    assert binding.schema is not None, "a table binding carries its output's schema"
    where = f"table {binding.table!r} (output {binding.output!r})"
    # Step 1
    try:
        check_supported(binding.output, binding.schema)
    except UnsupportedColumnType as exc:
        raise BindingRejected(sink, where, str(exc)) from None
    # Step 2
    if existing is None:
        return TablePlan((create_statement(dialect, binding),), created=True, added=())
    # Step 3
    found = {c.name: c for c in existing}
    statements: list[str] = []
    added: list[str] = []
    for field in binding.schema:
        expected = dialect.sql_type(binding.output, field)
        column = found.get(field.name)
        if column is None:
            if not field.nullable:
                raise BindingRejected(
                    sink,
                    where,
                    f"column {field.name!r} ({expected} NOT NULL) is missing; only nullable columns are added",
                )
            q = dialect.quote
            statements.append(f"ALTER TABLE {q(binding.table)} ADD COLUMN {q(field.name)} {expected}")
            added.append(field.name)
            continue
        if dialect.canonical(column.type) != dialect.canonical(expected):
            raise BindingRejected(
                sink, where, f"column {field.name!r} has type {column.type}, the output has {field.type} ({expected})"
            )
    names = {f.name for f in binding.schema}
    for column in existing:
        if column.name not in names and column.not_null and not column.has_default:
            raise BindingRejected(
                sink, where, f"column {column.name!r} is NOT NULL without a default, and the output has no such column"
            )
    if binding.mode is SinkMode.UPSERT and set(primary_key) != set(binding.keys):
        have = ", ".join(primary_key) or "none"
        raise BindingRejected(
            sink, where, f"the upsert keys ({', '.join(binding.keys)}) are not the table's primary key ({have})"
        )
    return TablePlan(tuple(statements), created=False, added=tuple(added))


def null_violation(binding: SinkBinding, not_null_columns: Sequence[str], rows: pa.Table) -> str | None:
    """Name the first NOT NULL column that ``rows`` would fill with a null (the batch then votes no)."""
    not_null = set(not_null_columns)
    for name in rows.column_names:
        if name in not_null and rows.column(name).null_count:
            return f"column {name!r} of table {binding.table!r} is NOT NULL, and the batch has nulls in it"
    return None
