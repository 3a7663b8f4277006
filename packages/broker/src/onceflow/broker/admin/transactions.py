"""``TransactionsAdmin``: list open transactions and abort a stuck one, over the Kafka protocol.

It talks to a single-node broker (the embedded one, which is every transactional id's coordinator),
with the same requests ``kafka-transactions.sh`` uses: ListTransactions and DescribeTransactions.
Against a multi-broker Kafka cluster, use ``kafka-transactions.sh`` instead.

Aborting is done the way a Kafka operator does it: a new producer instance for the transactional id
(InitProducerId with that id, what ``init_transactions()`` sends). The coordinator bumps the epoch,
which fences the stuck producer, and aborts its open transaction, markers included, before it
answers. A transaction whose commit is already decided (PrepareCommit) is completed as a commit
instead: the commit point has passed and only markers are missing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_transactions.v0.request import ListTransactionsRequest

from onceflow.broker.admin.connection import KafkaConnection
from onceflow.broker.admin.describe_transactions_schema import DescribeTransactionsResponse
from onceflow.broker.protocol.shapes import build_entity
from onceflow.core.errors import OnceflowError

OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")
"""Transaction states that hold partitions' last stable offsets back."""

_RETRIABLE = frozenset({ErrorCode.concurrent_transactions, ErrorCode.coordinator_load_in_progress})


class TransactionAdminError(OnceflowError):
    """The broker answered an admin request with an error, or the id is unknown."""

    def __init__(self, transactional_id: str | None, error: ErrorCode, action: str) -> None:
        self.transactional_id = transactional_id
        self.error = error
        self.action = action
        target = "" if transactional_id is None else f" of transactional id {transactional_id!r}"
        super().__init__(f"{action}{target} failed: {error.name}")


@dataclass(frozen=True)
class TransactionInfo:
    """One transactional id as DescribeTransactions reports it (times in ms since the epoch)."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[tuple[str, int], ...]

    @property
    def is_open(self) -> bool:
        """Whether the transaction is open (holds back last stable offsets)."""
        return self.state in OPEN_STATES

    def age_ms(self, now_ms: int) -> int | None:
        """How long ago the transaction started, or None if it never did."""
        return None if self.start_time_ms < 0 else max(0, now_ms - self.start_time_ms)


class TransactionsAdmin:
    """Admin operations on the transactions of the broker at ``bootstrap`` (``host:port``)."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        self._bootstrap = bootstrap
        self._timeout = timeout

    def _request(self, request: Any, response_cls: type[Any] | None = None) -> Any:
        with KafkaConnection(self._bootstrap, timeout=self._timeout) as connection:
            return connection.request(request, response_cls)

    def list_open(self) -> list[TransactionInfo]:
        """Every open transaction (Ongoing, PrepareCommit, PrepareAbort), oldest first."""
        listed = self._request(build_entity(ListTransactionsRequest, {"state_filters": list(OPEN_STATES)}))
        if listed.error_code is not ErrorCode.none:
            raise TransactionAdminError(None, listed.error_code, "ListTransactions")
        ids = [state.transactional_id for state in listed.transaction_states]
        described = [info for info in self.describe(ids) if info.is_open]
        return sorted(described, key=lambda info: (info.start_time_ms, info.transactional_id))

    def describe(self, transactional_ids: list[str]) -> list[TransactionInfo]:
        """DescribeTransactions for each id, in order; raises TransactionAdminError for an unknown id."""
        if not transactional_ids:
            return []
        response = self._request(
            build_entity(DescribeTransactionsRequest, {"transactional_ids": transactional_ids}),
            DescribeTransactionsResponse,
        )
        infos = []
        for state in response.transaction_states:
            if state.error_code is not ErrorCode.none:
                raise TransactionAdminError(state.transactional_id, state.error_code, "DescribeTransactions")
            infos.append(
                TransactionInfo(
                    transactional_id=state.transactional_id,
                    state=state.transaction_state,
                    producer_id=int(state.producer_id),
                    producer_epoch=int(state.producer_epoch),
                    timeout_ms=round(state.transaction_timeout.total_seconds() * 1000),
                    start_time_ms=int(state.transaction_start_time),
                    partitions=tuple((t.topic, int(p)) for t in state.topics for p in t.partitions),
                )
            )
        return infos

    def abort(self, transactional_id: str, retry_for_s: float = 30.0) -> TransactionInfo:
        """Fence the id's producer and end its open transaction; returns the state afterwards.

        Steps:

        1. Describe the id (TransactionAdminError if unknown) to keep its transaction timeout.
        2. Send InitProducerId with the id, as a new producer instance would; retry while the
           coordinator answers CONCURRENT_TRANSACTIONS (markers still being written).
        3. Describe the id again: its transaction is no longer open.
        """
        # Step 1
        (before,) = self.describe([transactional_id])
        request = build_entity(
            InitProducerIdRequest,
            {"transactional_id": transactional_id, "transaction_timeout": before.timeout_ms},
        )
        # Step 2
        deadline = time.monotonic() + retry_for_s
        while True:
            answer = self._request(request)
            if answer.error_code is ErrorCode.none:
                break
            if answer.error_code not in _RETRIABLE or time.monotonic() > deadline:
                raise TransactionAdminError(transactional_id, answer.error_code, "InitProducerId")
            time.sleep(0.2)
        # Step 3
        (after,) = self.describe([transactional_id])
        return after
