"""The coordinator's service (``onceflow coordinator``: :class:`CoordinatorServer`) and its gRPC face:
servicer, proto conversion, leader election and standby."""

from onceflow.coordinator.service.server import CoordinatorServer, coordinator_service
from onceflow.coordinator.service.servicer import SERVICE_NAME, STATUS_CODES, TransactionCoordinatorServicer

__all__ = ["SERVICE_NAME", "STATUS_CODES", "CoordinatorServer", "TransactionCoordinatorServicer", "coordinator_service"]
