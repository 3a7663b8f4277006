"""Ask the coordinator for the outcome of in-doubt transactions, waiting as long as it takes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

import grpc

from onceflow.core.contract import TransactionId
from onceflow.core.logging import get_logger
from onceflow.proto.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc
from onceflow.sinks.base import Outcome
from onceflow.sinks.exceptions import SinkError

_log = get_logger(__name__)

_COMMIT_STATES: Final = {common_pb2.TRANSACTION_STATE_COMMITTING, common_pb2.TRANSACTION_STATE_COMMITTED}
_ABORT_STATES: Final = {
    common_pb2.TRANSACTION_STATE_ABORTING,
    common_pb2.TRANSACTION_STATE_ABORTED,
    common_pb2.TRANSACTION_STATE_UNSPECIFIED,  # not in the coordinator's log: presumed abort
}
#: Codes worth retrying: the coordinator is down, restarting, overloaded or slow.
_RETRYABLE: Final = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}


class RecoveryInterrupted(SinkError):  # noqa: N818
    """The participant was stopped while it waited for the coordinator's decision."""


class CoordinatorOutcomes:
    """``outcome_of(txn)`` for :meth:`SinkParticipant.recover`, answered by the coordinator's GetTransaction.

    COMMITTING/COMMITTED mean COMMIT; ABORTING/ABORTED (and a transaction the coordinator does
    not know: presumed abort) mean ABORT. While the coordinator is unreachable, or the transaction
    is still PREPARING (no decision yet), it retries with exponential backoff until it gets a
    decision or ``stop`` is set (then :class:`RecoveryInterrupted`).
    """

    def __init__(
        self,
        channel: grpc.Channel,
        *,
        rpc_timeout_s: float = 5.0,
        initial_backoff_s: float = 0.2,
        max_backoff_s: float = 5.0,
        stop: threading.Event | None = None,
    ) -> None:
        stub_class: Callable[[grpc.Channel], Any] = coordinator_pb2_grpc.TransactionCoordinatorStub
        self._stub = stub_class(channel)
        self._rpc_timeout_s = rpc_timeout_s
        self._initial_backoff_s = initial_backoff_s
        self._max_backoff_s = max_backoff_s
        self._stop = stop or threading.Event()

    def __call__(self, txn: TransactionId) -> Outcome:
        backoff = self._initial_backoff_s
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._stub.GetTransaction(
                    coordinator_pb2.GetTransactionRequest(job=txn.job, batch=txn.batch), timeout=self._rpc_timeout_s
                )
                state = response.transaction.state
                if state in _COMMIT_STATES:
                    return Outcome.COMMIT
                if state in _ABORT_STATES:
                    return Outcome.ABORT
                _log.info("recover.undecided", job=txn.job, batch=txn.batch, txn=txn, state=state, attempt=attempt)
            except grpc.RpcError as exc:
                code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
                if code not in _RETRYABLE:
                    raise
                _log.warning(
                    "recover.coordinator_unreachable",
                    job=txn.job,
                    batch=txn.batch,
                    txn=txn,
                    code=code.name,
                    attempt=attempt,
                    retry_in_s=round(backoff, 2),
                )
            if self._stop.wait(backoff):
                raise RecoveryInterrupted(f"stopped while waiting for the coordinator's decision on {txn}")
            backoff = min(backoff * 2, self._max_backoff_s)
