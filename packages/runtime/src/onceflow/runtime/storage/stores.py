"""The three backing stores a worker's herder works on, handed around as one value."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.runtime.storage.configs import ConfigBackingStore
from onceflow.runtime.storage.offsets import OffsetBackingStore
from onceflow.runtime.storage.status import StatusBackingStore


@dataclass(frozen=True)
class BackingStores:
    """Connector configs, statuses and source offsets: memory ones in standalone mode, the compacted
    internal topics in distributed mode (Kafka Connect's config, status and offset backing stores)."""

    configs: ConfigBackingStore
    statuses: StatusBackingStore
    offsets: OffsetBackingStore
