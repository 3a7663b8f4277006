"""Tables for any output schema, shared by the SQLite and PostgreSQL sinks: column types per dialect,
the check of an existing table against a binding, and the conversion of Arrow rows to parameters."""

from onceflow.sinks.tables.access import POSTGRES_TABLES, SQLITE_TABLES, PostgresTables, SqliteTables, TableAccess
from onceflow.sinks.tables.check import Column, TablePlan, null_violation, plan_table
from onceflow.sinks.tables.dialects import POSTGRES, SQLITE, Dialect

__all__ = [
    "POSTGRES",
    "POSTGRES_TABLES",
    "SQLITE",
    "SQLITE_TABLES",
    "Column",
    "Dialect",
    "PostgresTables",
    "SqliteTables",
    "TableAccess",
    "TablePlan",
    "null_violation",
    "plan_table",
]
