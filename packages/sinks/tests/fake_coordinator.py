"""A tiny in-test TransactionCoordinator that answers GetTransaction from a table of decisions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc

from onceflow.core.grpc import build_server
from onceflow.core.settings import GrpcServerSettings
from onceflow.proto.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc

Decisions = dict[tuple[str, int], common_pb2.TransactionState]

COMMITTED = common_pb2.TRANSACTION_STATE_COMMITTED
ABORTED = common_pb2.TRANSACTION_STATE_ABORTED
PREPARING = common_pb2.TRANSACTION_STATE_PREPARING


class FakeCoordinator(coordinator_pb2_grpc.TransactionCoordinatorServicer):
    """Decisions by (job, batch); unknown transactions are ABORTED (presumed abort). Records every ask."""

    def __init__(self, decisions: Decisions) -> None:
        self.decisions = decisions
        self.asked: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def GetTransaction(  # noqa: N802
        self, request: coordinator_pb2.GetTransactionRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.GetTransactionResponse:
        with self._lock:
            self.asked.append((request.job, request.batch))
            state = self.decisions.get((request.job, request.batch), ABORTED)
        return coordinator_pb2.GetTransactionResponse(
            transaction=coordinator_pb2.Transaction(
                id=common_pb2.TransactionId(job=request.job, batch=request.batch), state=state
            )
        )


@contextmanager
def running_coordinator(decisions: Decisions, port: int = 0) -> Iterator[tuple[FakeCoordinator, int]]:
    """Serve a :class:`FakeCoordinator` on 127.0.0.1:``port`` (0 = any free port)."""
    servicer = FakeCoordinator(decisions)
    service = coordinator_pb2.DESCRIPTOR.services_by_name["TransactionCoordinator"].full_name
    server, bound = build_server(GrpcServerSettings(port=port), service_names=[service], max_workers=4)
    add: Callable[[Any, grpc.Server], None] = coordinator_pb2_grpc.add_TransactionCoordinatorServicer_to_server
    add(servicer, server)
    server.start()
    try:
        yield servicer, bound
    finally:
        server.stop(0).wait()
