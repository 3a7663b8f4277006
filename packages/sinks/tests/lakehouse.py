"""Opening the lakehouse sinks in tests: a Delta root or an Iceberg warehouse (SQLite or PostgreSQL catalog)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onceflow.sinks.delta.settings import DeltaOptions
from onceflow.sinks.iceberg.settings import IcebergCatalogSettings, IcebergOptions
from onceflow.sinks.lakehouse.open import open_participant
from onceflow.sinks.lakehouse.participant import LakehouseParticipant

KINDS = ("delta", "iceberg")


def lakehouse_options(kind: str, base: Path, *, postgres_dsn: str = "", **extra: Any) -> DeltaOptions | IcebergOptions:
    """The options of a ``kind`` sink keeping everything under ``base`` (an Iceberg catalog in SQLite,
    or in the PostgreSQL database ``postgres_dsn``)."""
    if kind == "delta":
        return DeltaOptions(root=str(base / "lake"), state_dir=str(base / "state"), **extra)
    catalog = IcebergCatalogSettings(postgres_dsn=postgres_dsn, sqlite="" if postgres_dsn else str(base / "catalog.db"))
    return IcebergOptions(warehouse=str(base / "warehouse"), state_dir=str(base / "state"), catalog=catalog, **extra)


def open_lakehouse(kind: str, base: Path, name: str = "lake", **extra: Any) -> LakehouseParticipant:
    return open_participant(name, lakehouse_options(kind, base, **extra))
