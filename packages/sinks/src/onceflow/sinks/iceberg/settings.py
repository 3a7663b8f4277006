"""Settings of an Apache Iceberg sink (``kind = "iceberg"``)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, field_validator, model_validator

from onceflow.core.settings import Section
from onceflow.sinks.lakehouse.settings import LakehouseOptions, check_table_root


class IcebergCatalogSettings(Section):
    """pyiceberg's SQL catalog, in a database the participant already has: exactly one of ``sqlite``
    (a database file) or ``postgres_dsn`` (a libpq connection string). No catalog server is needed."""

    #: The catalog's name in its ``iceberg_tables`` rows (what another engine's catalog config names).
    name: str = Field(default="onceflow", min_length=1, max_length=255)
    sqlite: str = ""
    postgres_dsn: str = ""
    #: The namespace holding the sink's tables.
    namespace: str = Field(default="onceflow", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

    @model_validator(mode="after")
    def _one_database(self) -> Self:
        if bool(self.sqlite) == bool(self.postgres_dsn):
            raise ValueError("set exactly one of sqlite (a database file) or postgres_dsn (a libpq DSN)")
        return self


class IcebergOptions(LakehouseOptions):
    """``warehouse`` holds the tables' data and metadata (``<warehouse>/<namespace>/<table>``): a local
    directory or ``s3://bucket/prefix``; ``state_dir`` holds the journal of prepared batches."""

    warehouse: str = Field(min_length=1)
    catalog: IcebergCatalogSettings

    @field_validator("warehouse")
    @classmethod
    def _table_root(cls, value: str) -> str:
        return check_table_root(value)
