"""Settings of a Delta Lake sink (``kind = "delta"``)."""

from __future__ import annotations

from pydantic import Field, field_validator

from onceflow.sinks.lakehouse.settings import LakehouseOptions, check_table_root


class DeltaOptions(LakehouseOptions):
    """``root`` holds one Delta table per binding (``<root>/<table>``): a local directory or
    ``s3://bucket/prefix``; ``state_dir`` holds the journal of prepared batches (local disk)."""

    root: str = Field(min_length=1)

    @field_validator("root")
    @classmethod
    def _table_root(cls, value: str) -> str:
        return check_table_root(value)
