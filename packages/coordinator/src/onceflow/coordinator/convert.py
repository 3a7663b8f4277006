"""``to_proto`` / ``from_proto``: the only place that knows both the domain values and coordinator.proto."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.contract import ParticipantRef, Resolution, TransactionState
from onceflow.contract import proto as contract_proto
from onceflow.contract.proto import binding_from_proto, shard_from_proto
from onceflow.coordinator.exceptions import InvalidRequest
from onceflow.coordinator.model import Transaction
from onceflow.proto.v1 import coordinator_pb2


def state_from_proto(value: int, field: str = "state") -> TransactionState:
    """A known state; :class:`InvalidRequest` naming ``field`` for UNSPECIFIED or an unknown value."""
    try:
        state = contract_proto.state_from_proto(value)
    except ValueError as exc:
        raise InvalidRequest(field, str(exc)) from None
    if state is None:
        raise InvalidRequest(field, f"{value} is not a transaction state")
    return state


def resolution_from_proto(value: int) -> Resolution:
    try:
        return contract_proto.resolution_from_proto(value)
    except ValueError as exc:
        raise InvalidRequest("resolution", str(exc)) from None


def participants_from_proto(refs: Iterable[coordinator_pb2.ParticipantRef]) -> list[ParticipantRef]:
    """Participant refs with their bindings and shards; a bad binding or shard is :class:`InvalidRequest`
    naming it."""
    converted = []
    for i, ref in enumerate(refs):
        bindings = []
        for j, message in enumerate(ref.bindings):
            try:
                bindings.append(binding_from_proto(message))
            except ValueError as exc:
                raise InvalidRequest(f"participants[{i}].bindings[{j}]", str(exc)) from None
        try:
            shard = shard_from_proto(ref.shard if ref.HasField("shard") else None)
        except ValueError as exc:
            raise InvalidRequest(f"participants[{i}].shard", f"{exc} (sink {ref.sink!r})") from None
        converted.append(ParticipantRef(sink=ref.sink, target=ref.target, bindings=tuple(bindings), shard=shard))
    return converted


def transaction_to_proto(txn: Transaction) -> coordinator_pb2.Transaction:
    return contract_proto.report_to_proto(txn.report())
