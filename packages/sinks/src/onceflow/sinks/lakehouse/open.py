"""Open a lakehouse sink's table format, or its participant, from its settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onceflow.contract import WHOLE_SINK, Shard
from onceflow.sinks.delta.settings import DeltaOptions
from onceflow.sinks.iceberg.settings import IcebergOptions
from onceflow.sinks.lakehouse.format import TableFormat
from onceflow.sinks.lakehouse.participant import LakehouseParticipant
from onceflow.sinks.lakehouse.storage import TableStore


def open_format(sink: str, options: DeltaOptions | IcebergOptions, *, create: bool = True) -> TableFormat[Any]:
    """The sink's tables: Delta tables under ``root``, or Iceberg tables of the SQL catalog.

    ``create``: make a missing local root (and the Iceberg catalog's tables and namespace), as the
    participant does; readers (``create=False``) change nothing.
    """
    if isinstance(options, DeltaOptions):
        from onceflow.sinks.delta.format import DeltaFormat

        return DeltaFormat(sink, TableStore(options.root, options.s3, create=create))
    from onceflow.sinks.iceberg.catalog import open_catalog
    from onceflow.sinks.iceberg.format import IcebergFormat

    store = TableStore(options.warehouse, options.s3, create=create)
    catalog = open_catalog(options.catalog, store, create=create)
    return IcebergFormat(sink, catalog, options.catalog.namespace, store)


def open_participant(
    sink: str, options: DeltaOptions | IcebergOptions, *, shard: Shard = WHOLE_SINK
) -> LakehouseParticipant:
    """The participant of a ``delta`` or ``iceberg`` sink (or of its ``shard``)."""
    return LakehouseParticipant(
        sink,
        open_format(sink, options),
        state_dir=Path(options.state_dir),
        retry=options.commit_retry,
        shard=shard,
    )
