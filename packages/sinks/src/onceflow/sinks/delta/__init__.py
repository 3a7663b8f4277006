"""The Delta Lake sink (delta-rs): data files outside the log, one commit per table and batch. Its
participant is :class:`~onceflow.sinks.lakehouse.LakehouseParticipant` over :class:`DeltaFormat`.

- :mod:`onceflow.sinks.delta.format`: :class:`DeltaFormat` (delta-rs), its ``txn`` application id;
- :mod:`onceflow.sinks.delta.settings`: :class:`DeltaOptions` (light: the participant's settings import it).

Only the settings are imported here, so reading a participant config does not load delta-rs.
"""

from onceflow.sinks.delta.settings import DeltaOptions

__all__ = ["DeltaOptions"]
