"""Tables for any output schema, shared by the SQLite and PostgreSQL sinks: column types per dialect,
the check of an existing table against a binding, and the conversion of Arrow rows to parameters."""

from onceflow.sinks.tables.check import Column, TablePlan, null_violation, plan_table
from onceflow.sinks.tables.dialects import POSTGRES, SQLITE, Dialect

__all__ = ["POSTGRES", "SQLITE", "Column", "Dialect", "TablePlan", "null_violation", "plan_table"]
