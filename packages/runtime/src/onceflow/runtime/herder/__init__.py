"""The control plane: herders decide which tasks run on this worker, and serve the admin operations."""

from onceflow.runtime.herder.admin_ops import ConnectorInfo, ValidationResult
from onceflow.runtime.herder.assignment import SlotMembership, slot_of
from onceflow.runtime.herder.distributed import DistributedHerder
from onceflow.runtime.herder.herder import Herder
from onceflow.runtime.herder.standalone import StandaloneHerder

__all__ = [
    "ConnectorInfo",
    "DistributedHerder",
    "Herder",
    "SlotMembership",
    "StandaloneHerder",
    "ValidationResult",
    "slot_of",
]
