"""The Apache Iceberg sink (pyiceberg, a SQL catalog): data files first, one snapshot per batch. Its
participant is :class:`~onceflow.sinks.lakehouse.LakehouseParticipant` over :class:`IcebergFormat`.

- :mod:`onceflow.sinks.iceberg.format`: :class:`IcebergFormat`, the ``onceflow.last-batch.<job>`` property;
- :mod:`onceflow.sinks.iceberg.catalog`: pyiceberg's ``SqlCatalog`` on SQLite or PostgreSQL;
- :mod:`onceflow.sinks.iceberg.settings`: :class:`IcebergOptions` (light: the participant's settings import it).

Only the settings are imported here, so reading a participant config does not load pyiceberg.
"""

from onceflow.sinks.iceberg.settings import IcebergCatalogSettings, IcebergOptions

__all__ = ["IcebergCatalogSettings", "IcebergOptions"]
