"""Errors of the Spark worker. Each one means one thing and names the ids needed to act on it.

Errors raised inside Spark (in the source's ``read``, the sink's ``commit``) reach the driver as the
text of a ``StreamingQueryException``. Each message therefore starts with a stable tag
(``[onceflow.<Name>]``) so the restart loop can tell them apart after the JVM round trip.
"""

from __future__ import annotations

from onceflow.contract import TransactionId
from onceflow.core.errors import OnceflowError


def tag(name: str) -> str:
    """The tag that starts the message of the error class ``name``."""
    return f"[onceflow.{name}]"


class SparkWorkerError(OnceflowError):
    """Base class of the Spark worker's errors."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{tag(type(self).__name__)} {message}")


class OffsetsOutOfRange(SparkWorkerError):  # noqa: N818 - the condition's name
    """A range planned for a micro-batch is no longer in the topic (retention deleted it): data loss."""

    def __init__(self, topic: str, partition: int, start: int, earliest: int) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.earliest = earliest
        super().__init__(
            f"topic-partition {topic}-{partition}: offset {start} is out of range (the earliest available offset "
            f"is {earliest}); records {start}..{earliest - 1} were deleted before they were processed. "
            "Set the source option failOnDataLoss=false to skip them instead of failing the query."
        )


class SourceReadTimeout(SparkWorkerError):  # noqa: N818 - the condition's name
    """A task could not read its whole offset range within the fetch deadline."""

    def __init__(self, topic: str, partition: int, *, start: int, end: int, position: int, timeout_s: float) -> None:
        super().__init__(
            f"topic-partition {topic}-{partition}: reading offsets [{start}, {end}) stalled at position {position} "
            f"for {timeout_s:.0f}s (is the broker reachable?)"
        )


class WriterFencedError(SparkWorkerError):
    """Another driver registered as the job's writer: this driver must stop and not restart."""

    def __init__(self, job: str, epoch: int, detail: str) -> None:
        self.job = job
        self.epoch = epoch
        super().__init__(
            f"job {job!r}: this driver (writer epoch {epoch}) is fenced: another driver owns the job now ({detail})"
        )


class JobDefinitionError(SparkWorkerError):
    """The job cannot run as defined: an output has an unsupported column type, a binding does not fit
    its table, the entry point cannot be loaded. Fails at start, before any batch; never restarted."""

    def __init__(self, job: str, detail: str) -> None:
        self.job = job
        self.detail = detail
        super().__init__(f"job {job!r} cannot start: {detail}")


class TransactionAborted(SparkWorkerError):  # noqa: N818 - the outcome's name
    """The coordinator aborted the micro-batch's transaction; Spark fails the batch and it is re-run."""

    def __init__(self, job: str, batch: int, reason: str) -> None:
        self.job = job
        self.batch = batch
        super().__init__(
            f"transaction {TransactionId(job, batch)} was aborted by the coordinator: {reason or 'no reason given'}"
        )


class CoordinatorUnavailable(SparkWorkerError):  # noqa: N818 - the condition's name
    """The coordinator could not be reached or refused the call for a reason other than fencing."""

    def __init__(self, operation: str, job: str, detail: str) -> None:
        super().__init__(f"coordinator {operation} for job {job!r} failed: {detail}")


class RestartsExhausted(SparkWorkerError):  # noqa: N818 - the condition's name
    """The query failed more often than the restart strategy allows; carries the last error."""

    def __init__(self, job: str, attempts: int, last_error: str) -> None:
        self.job = job
        self.last_error = last_error
        super().__init__(f"job {job!r} failed after {attempts} restart attempt(s); last error: {last_error}")


def is_fenced(error: BaseException | str) -> bool:
    """True when ``error`` (or its text, after a trip through the JVM) is a :class:`WriterFencedError`."""
    return isinstance(error, WriterFencedError) or tag(WriterFencedError.__name__) in str(error)
