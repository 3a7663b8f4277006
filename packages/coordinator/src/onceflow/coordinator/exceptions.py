"""Exceptions of the transaction coordinator. The gRPC boundary maps each to one status code."""

from __future__ import annotations

from onceflow.core.errors import OnceflowError, WriterFenced

__all__ = [
    "CoordinatorError",
    "CoordinatorFenced",
    "CoordinatorNotActive",
    "CoordinatorStopped",
    "InvalidRequest",
    "InvalidTransition",
    "LogAppendRejected",
    "NoParticipants",
    "ResolutionRefused",
    "TransactionDecided",
    "TransactionLogError",
    "UnknownEpoch",
    "UnknownJob",
    "WriterFenced",
]


class CoordinatorError(OnceflowError):
    """Base class of the coordinator's errors."""


class InvalidRequest(CoordinatorError):  # noqa: N818
    """A request argument is malformed (empty job, negative batch, bad staged file...)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class UnknownJob(CoordinatorError):  # noqa: N818
    """The job never registered a writer with this coordinator."""

    def __init__(self, job: str) -> None:
        self.job = job
        super().__init__(f"unknown job {job!r}: register a writer first (RegisterWriter)")


class UnknownEpoch(CoordinatorError):  # noqa: N818
    """A writer epoch newer than any this coordinator handed out."""

    def __init__(self, job: str, epoch: int, current_epoch: int) -> None:
        self.job = job
        self.epoch = epoch
        super().__init__(f"job {job!r} has no writer epoch {epoch} (current epoch is {current_epoch})")


class NoParticipants(CoordinatorError):  # noqa: N818
    """The job has no participants, so there is nothing to commit to."""

    def __init__(self, job: str) -> None:
        self.job = job
        super().__init__(f"job {job!r} has no participants: call RegisterParticipants first")


class ResolutionRefused(CoordinatorError):  # noqa: N818
    """An abort or an operator's resolution cannot be applied to the transaction in its current state."""

    def __init__(self, txn: str, reason: str) -> None:
        self.txn = txn
        super().__init__(f"transaction {txn}: {reason}")


class TransactionDecided(ResolutionRefused):
    """The transaction's outcome is already decided and cannot be flipped."""

    def __init__(self, txn: str, state: str, wanted: str) -> None:
        self.state = state
        super().__init__(txn, f"is {state}, a decided outcome; it cannot be made to {wanted}")


class InvalidTransition(CoordinatorError):  # noqa: N818
    """A bug: a state change the transaction state machine does not allow. Nothing was logged."""

    def __init__(self, txn: str, current: str, target: str) -> None:
        self.txn = txn
        super().__init__(f"transaction {txn}: {current} cannot move to {target}")


class TransactionLogError(CoordinatorError):
    """The durable transaction log could not be read or written. The coordinator must stop serving."""


class LogAppendRejected(CoordinatorError):  # noqa: N818
    """The log refused one append (its records are too large) and nothing was written.

    Unlike :class:`TransactionLogError` the outcome is known, so only the request that caused it
    fails; the coordinator keeps serving.
    """


class CoordinatorFenced(TransactionLogError):  # noqa: N818 - the name the design uses
    """A newer coordinator instance owns the transaction log; this one is a zombie and must stop."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"coordinator fenced by a newer instance: {detail}")


class CoordinatorStopped(CoordinatorError):  # noqa: N818
    """The coordinator stopped serving (closed, or failed because its log failed)."""


class CoordinatorNotActive(CoordinatorStopped):
    """This instance has not taken over the log (yet): a standby, or one still recovering. Retry,
    on the active coordinator the message names if it knows one."""
