"""Ask the coordinator for the outcome of in-doubt transactions, waiting as long as it takes."""

from __future__ import annotations

import threading
from typing import Final

import grpc

from onceflow.contract import Resolution, TransactionId
from onceflow.contract.clients import CoordinatorClient, RpcFailed
from onceflow.core.logging import get_logger
from onceflow.sinks.exceptions import SinkError

_log = get_logger(__name__)

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
        coordinator: CoordinatorClient,
        *,
        rpc_timeout_s: float = 5.0,
        initial_backoff_s: float = 0.2,
        max_backoff_s: float = 5.0,
        stop: threading.Event | None = None,
    ) -> None:
        self._coordinator = coordinator
        self._rpc_timeout_s = rpc_timeout_s
        self._initial_backoff_s = initial_backoff_s
        self._max_backoff_s = max_backoff_s
        self._stop = stop or threading.Event()

    def __call__(self, txn: TransactionId) -> Resolution:
        backoff = self._initial_backoff_s
        attempt = 0
        while True:
            attempt += 1
            try:
                # A transaction not in the coordinator's log reads ABORTED: presumed abort.
                state = self._coordinator.get_transaction(txn, timeout_s=self._rpc_timeout_s).state
                if state.is_decided:
                    return Resolution.COMMIT if state.is_commit else Resolution.ABORT
                _log.info("recover.undecided", **txn.log_fields(), state=state.value, attempt=attempt)
            except RpcFailed as exc:
                code = exc.code()
                if code not in _RETRYABLE:
                    raise
                _log.warning(
                    "recover.coordinator_unreachable",
                    **txn.log_fields(),
                    code=code.name,
                    attempt=attempt,
                    retry_in_s=round(backoff, 2),
                )
            if self._stop.wait(backoff):
                raise RecoveryInterrupted(f"stopped while waiting for the coordinator's decision on {txn}")
            backoff = min(backoff * 2, self._max_backoff_s)
