"""The coordinator's values (``coordinator.proto``) to and from their messages: resolutions, the
outcome of a transaction's end, and the coordinator's report of a transaction."""

from __future__ import annotations

from fractions import Fraction
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from onceflow.contract.proto.common import (
    files_from_proto,
    files_to_proto,
    state_from_proto,
    state_to_proto,
    txn_id_from_proto,
    txn_id_to_proto,
)
from onceflow.contract.report import ParticipantVote, TransactionOutcome, TransactionReport
from onceflow.contract.state import Resolution, TransactionState
from onceflow.proto.v1 import coordinator_pb2

_NANOS_PER_SECOND: Final = 1_000_000_000


_RESOLUTION_TO_PROTO: Final[dict[Resolution, coordinator_pb2.Resolution]] = {
    Resolution.COMMIT: coordinator_pb2.RESOLUTION_COMMIT,
    Resolution.ABORT: coordinator_pb2.RESOLUTION_ABORT,
}
_RESOLUTION_FROM_PROTO: Final[dict[int, Resolution]] = {int(v): k for k, v in _RESOLUTION_TO_PROTO.items()}


def resolution_to_proto(resolution: Resolution) -> coordinator_pb2.Resolution:
    return _RESOLUTION_TO_PROTO[resolution]


def resolution_from_proto(value: int) -> Resolution:
    """ValueError for RESOLUTION_UNSPECIFIED or a value that is not a resolution."""
    try:
        return _RESOLUTION_FROM_PROTO[value]
    except KeyError:
        raise ValueError("must be RESOLUTION_COMMIT or RESOLUTION_ABORT") from None


def _reported_state(value: int) -> TransactionState:
    """The state of an answer; UNSPECIFIED (a transaction the coordinator does not know) is presumed aborted."""
    return state_from_proto(value) or TransactionState.ABORTED


def outcome_from_proto(state: int, reason: str = "") -> TransactionOutcome:
    """The ``state`` (and ``reason``: only CommitTransaction's answer has one) of a Commit-, Abort- or
    ResolveTransactionResponse."""
    return TransactionOutcome(state=_reported_state(state), reason=reason)


def _timestamp_to_proto(seconds: float) -> Timestamp:
    """Seconds since the epoch (0: unknown, left unset), to the nanosecond. The float's exact value is
    scaled (a float product would be off by up to 128 ns at today's epoch), so that
    :func:`_timestamp_from_proto` gives the same float back for any time after February 1970 (from
    there on, floats are coarser than a nanosecond)."""
    stamp = Timestamp()
    if seconds > 0:
        stamp.FromNanoseconds(round(Fraction(seconds) * _NANOS_PER_SECOND))
    return stamp


def _timestamp_from_proto(stamp: Timestamp) -> float:
    """The float nearest to ``stamp`` (an exact integer division, not a float one)."""
    return stamp.ToNanoseconds() / _NANOS_PER_SECOND


def report_to_proto(report: TransactionReport) -> coordinator_pb2.Transaction:
    return coordinator_pb2.Transaction(
        id=txn_id_to_proto(report.id),
        state=state_to_proto(report.state),
        writer_epoch=report.writer_epoch,
        files=files_to_proto(report.files),
        participants=[
            coordinator_pb2.ParticipantVote(
                sink=vote.sink, prepared=vote.prepared, acknowledged=vote.acknowledged, error=vote.error
            )
            for vote in report.votes
        ],
        started_at=_timestamp_to_proto(report.started_at),
        updated_at=_timestamp_to_proto(report.updated_at),
        reason=report.reason,
    )


def report_from_proto(message: coordinator_pb2.Transaction) -> TransactionReport:
    """A :class:`TransactionReport`; ValueError for an id with an empty job or a negative batch."""
    return TransactionReport(
        id=txn_id_from_proto(message.id),
        state=_reported_state(message.state),
        writer_epoch=message.writer_epoch,
        files=tuple(files_from_proto(message.files)),
        votes=tuple(
            ParticipantVote(sink=v.sink, prepared=v.prepared, acknowledged=v.acknowledged, error=v.error)
            for v in message.participants
        ),
        started_at=_timestamp_from_proto(message.started_at),
        updated_at=_timestamp_from_proto(message.updated_at),
        reason=message.reason,
    )
