"""``to_proto`` / ``from_proto``: the only place that knows both the domain values and coordinator.proto."""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.timestamp_pb2 import Timestamp

from onceflow.coordinator.exceptions import InvalidRequest
from onceflow.coordinator.model import (
    ParticipantRef,
    Resolution,
    Transaction,
    TransactionState,
)
from onceflow.core.contract.proto import binding_from_proto, files_to_proto
from onceflow.proto.v1 import common_pb2, coordinator_pb2

_STATE_TO_PROTO = {
    TransactionState.PREPARING: common_pb2.TRANSACTION_STATE_PREPARING,
    TransactionState.COMMITTING: common_pb2.TRANSACTION_STATE_COMMITTING,
    TransactionState.COMMITTED: common_pb2.TRANSACTION_STATE_COMMITTED,
    TransactionState.ABORTING: common_pb2.TRANSACTION_STATE_ABORTING,
    TransactionState.ABORTED: common_pb2.TRANSACTION_STATE_ABORTED,
}
_STATE_FROM_PROTO = {value: key for key, value in _STATE_TO_PROTO.items()}
_RESOLUTION_FROM_PROTO = {
    coordinator_pb2.RESOLUTION_COMMIT: Resolution.COMMIT,
    coordinator_pb2.RESOLUTION_ABORT: Resolution.ABORT,
}


def state_to_proto(state: TransactionState) -> common_pb2.TransactionState:
    return _STATE_TO_PROTO[state]


def state_from_proto(value: int, field: str = "state") -> TransactionState:
    try:
        return _STATE_FROM_PROTO[value]  # type: ignore[index]
    except KeyError:
        raise InvalidRequest(field, f"{value} is not a transaction state") from None


def state_name(value: int) -> str:
    """``COMMITTED`` for TRANSACTION_STATE_COMMITTED (for CLI output)."""
    return common_pb2.TransactionState.Name(value).removeprefix("TRANSACTION_STATE_")


def resolution_from_proto(value: int) -> Resolution:
    try:
        return _RESOLUTION_FROM_PROTO[value]  # type: ignore[index]
    except KeyError:
        raise InvalidRequest("resolution", "must be RESOLUTION_COMMIT or RESOLUTION_ABORT") from None


def participants_from_proto(refs: Iterable[coordinator_pb2.ParticipantRef]) -> list[ParticipantRef]:
    """Participant refs with their bindings; a bad binding is :class:`InvalidRequest` naming it."""
    converted = []
    for i, ref in enumerate(refs):
        bindings = []
        for j, message in enumerate(ref.bindings):
            try:
                bindings.append(binding_from_proto(message))
            except ValueError as exc:
                raise InvalidRequest(f"participants[{i}].bindings[{j}]", str(exc)) from None
        converted.append(ParticipantRef(sink=ref.sink, target=ref.target, bindings=tuple(bindings)))
    return converted


def _timestamp(seconds: float) -> Timestamp:
    stamp = Timestamp()
    if seconds > 0:
        stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def transaction_to_proto(txn: Transaction) -> coordinator_pb2.Transaction:
    return coordinator_pb2.Transaction(
        id=common_pb2.TransactionId(job=txn.id.job, batch=txn.id.batch),
        state=state_to_proto(txn.state),
        writer_epoch=txn.writer_epoch,
        files=files_to_proto(txn.files),
        participants=[
            coordinator_pb2.ParticipantVote(
                sink=vote.sink, prepared=vote.prepared, acknowledged=vote.acknowledged, error=vote.error
            )
            for vote in (txn.vote_of(ref.sink) for ref in txn.participants)
        ],
        started_at=_timestamp(txn.started_at),
        updated_at=_timestamp(txn.updated_at),
        reason=txn.reason,
    )
