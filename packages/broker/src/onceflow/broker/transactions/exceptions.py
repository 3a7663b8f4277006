"""Errors of the transaction coordinator.

Protocol outcomes (fenced producer, wrong state, unknown id, ...) are ``ErrorCode`` results, not
exceptions. Exceptions here mean a broken contract with a collaborator, a damaged transaction log,
or a bug.
"""

from __future__ import annotations

from onceflow.core.errors import OnceflowError


class TransactionCoordinatorError(OnceflowError):
    """Base class of every transaction coordinator error."""


class MarkerWriteError(TransactionCoordinatorError):
    """A ``MarkerWriter`` could not write a marker because the partition does not exist (any more).

    The coordinator treats the partition as done, as Kafka does for deleted topics: there is no log
    left that a marker could close.
    """

    def __init__(self, topic: str, partition: int, reason: str) -> None:
        self.topic = topic
        self.partition = partition
        self.reason = reason
        super().__init__(f"cannot write a transaction marker to {topic}-{partition}: {reason}")


class TransactionCompletionInterrupted(TransactionCoordinatorError):  # noqa: N818 - the name says what it is
    """Writing the markers or completing the group offsets of a decided transaction failed.

    The outcome is already durable (PrepareCommit/PrepareAbort is in the log): the coordinator keeps
    the transaction prepared and retries completion in the background and on restart.
    """

    def __init__(self, transactional_id: str, producer_id: int, stage: str, cause: BaseException) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.stage = stage
        self.cause = cause
        super().__init__(
            f"completing transaction {transactional_id!r} (pid {producer_id}) stopped while {stage}: {cause!r}"
        )


class IllegalTransactionTransition(TransactionCoordinatorError):  # noqa: N818
    """Code tried a transition the transaction state machine does not have (a bug)."""

    def __init__(self, transactional_id: str, current: str, target: str) -> None:
        self.transactional_id = transactional_id
        self.current = current
        self.target = target
        super().__init__(f"transaction {transactional_id!r} cannot go from {current} to {target}")


class InvalidTransactionRecord(TransactionCoordinatorError):  # noqa: N818
    """A record of the transaction log cannot be decoded (unknown version, or malformed)."""

    def __init__(self, key: bytes, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"invalid transaction log record {key!r}: {reason}")
