"""The gRPC face of the coordinator: servicer, proto conversion, and the server process."""

from onceflow.coordinator.service.server import CoordinatorServer
from onceflow.coordinator.service.servicer import SERVICE_NAME, STATUS_CODES, TransactionCoordinatorServicer

__all__ = ["SERVICE_NAME", "STATUS_CODES", "CoordinatorServer", "TransactionCoordinatorServicer"]
