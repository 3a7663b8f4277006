"""The records the group coordinator keeps in its state log, and their encoding.

Keys are compact JSON arrays, so that they are unambiguous and readable in a hex dump:

* ``["group", group_id]``: the group's last stable (or empty) generation and its members;
* ``["offset", group_id, topic, partition]``: a committed offset;
* ``["txn-offset", group_id, producer_id, topic, partition]``: an offset staged by an open transaction.

Values are compact JSON objects with a format version ``"v"`` (currently 1); bytes are base64. A
``None`` value (tombstone) deletes the key.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from onceflow.broker.groups.exceptions import InvalidGroupRecord
from onceflow.broker.groups.member_client import MemberClient
from onceflow.broker.groups.results import OffsetAndMetadata

FORMAT_VERSION = 1


@dataclass(frozen=True)
class GroupKey:
    """Key of a group metadata record."""

    group_id: str


@dataclass(frozen=True)
class OffsetKey:
    """Key of a committed offset record."""

    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True)
class TxnOffsetKey:
    """Key of a pending transactional offset record."""

    group_id: str
    producer_id: int
    topic: str
    partition: int


RecordKey = GroupKey | OffsetKey | TxnOffsetKey


@dataclass(frozen=True)
class StoredMember:
    """A member as persisted: its ids and client, its metadata for the group's protocol, and its assignment."""

    member_id: str
    group_instance_id: str | None
    client: MemberClient
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class StoredGroup:
    """A group as persisted: a generation with members (Stable) or without (Empty)."""

    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    members: list[StoredMember]


@dataclass(frozen=True)
class StoredTxnOffset:
    """A pending transactional offset as persisted."""

    producer_epoch: int
    offset: OffsetAndMetadata


def encode_key(key: RecordKey) -> bytes:
    """The state log key of a record."""
    fields: list[Any]
    match key:
        case GroupKey(group_id):
            fields = ["group", group_id]
        case OffsetKey(group_id, topic, partition):
            fields = ["offset", group_id, topic, partition]
        case TxnOffsetKey(group_id, producer_id, topic, partition):
            fields = ["txn-offset", group_id, producer_id, topic, partition]
    return _dumps(fields)


def decode_key(raw: bytes) -> RecordKey:
    """Decode a state log key; raises ``InvalidGroupRecord`` for unknown kinds."""
    fields = _loads(raw, raw)
    match fields:
        case ["group", str(group_id)]:
            return GroupKey(group_id)
        case ["offset", str(group_id), str(topic), int(partition)]:
            return OffsetKey(group_id, topic, partition)
        case ["txn-offset", str(group_id), int(producer_id), str(topic), int(partition)]:
            return TxnOffsetKey(group_id, producer_id, topic, partition)
    raise InvalidGroupRecord(raw, "unknown record key")


def encode_group(group: StoredGroup) -> bytes:
    """The value of a group metadata record."""
    return _dumps(
        {
            "v": FORMAT_VERSION,
            "protocol_type": group.protocol_type,
            "generation": group.generation_id,
            "protocol": group.protocol_name,
            "leader": group.leader_id,
            "members": [
                {
                    "id": member.member_id,
                    "instance": member.group_instance_id,
                    "client_id": member.client.client_id,
                    "client_host": member.client.client_host,
                    "rebalance_timeout_ms": member.client.rebalance_timeout_ms,
                    "session_timeout_ms": member.client.session_timeout_ms,
                    "subscription": _b64(member.subscription),
                    "assignment": _b64(member.assignment),
                }
                for member in group.members
            ],
        }
    )


def decode_group(key: bytes, raw: bytes) -> StoredGroup:
    """Decode a group metadata record value."""
    value = _versioned(key, raw)
    try:
        return StoredGroup(
            protocol_type=value["protocol_type"],
            generation_id=int(value["generation"]),
            protocol_name=value["protocol"],
            leader_id=value["leader"],
            members=[
                StoredMember(
                    member_id=member["id"],
                    group_instance_id=member["instance"],
                    client=MemberClient(
                        client_id=member["client_id"],
                        client_host=member["client_host"],
                        rebalance_timeout_ms=int(member["rebalance_timeout_ms"]),
                        session_timeout_ms=int(member["session_timeout_ms"]),
                    ),
                    subscription=base64.b64decode(member["subscription"]),
                    assignment=base64.b64decode(member["assignment"]),
                )
                for member in value["members"]
            ],
        )
    except (KeyError, TypeError, ValueError) as error:
        raise InvalidGroupRecord(key, f"malformed group value: {error}") from error


def encode_offset(offset: OffsetAndMetadata) -> bytes:
    """The value of a committed offset record."""
    return _dumps({"v": FORMAT_VERSION, **_offset_fields(offset)})


def decode_offset(key: bytes, raw: bytes) -> OffsetAndMetadata:
    """Decode a committed offset record value."""
    return _offset_from(key, _versioned(key, raw))


def encode_txn_offset(staged: StoredTxnOffset) -> bytes:
    """The value of a pending transactional offset record."""
    return _dumps({"v": FORMAT_VERSION, "producer_epoch": staged.producer_epoch, **_offset_fields(staged.offset)})


def decode_txn_offset(key: bytes, raw: bytes) -> StoredTxnOffset:
    """Decode a pending transactional offset record value."""
    value = _versioned(key, raw)
    try:
        epoch = int(value["producer_epoch"])
    except (KeyError, TypeError, ValueError) as error:
        raise InvalidGroupRecord(key, f"malformed transactional offset: {error}") from error
    return StoredTxnOffset(epoch, _offset_from(key, value))


def _offset_fields(offset: OffsetAndMetadata) -> dict[str, Any]:
    return {
        "offset": offset.offset,
        "leader_epoch": offset.leader_epoch,
        "metadata": offset.metadata,
        "commit_ts": offset.commit_timestamp_ms,
    }


def _offset_from(key: bytes, value: dict[str, Any]) -> OffsetAndMetadata:
    try:
        return OffsetAndMetadata(
            offset=int(value["offset"]),
            leader_epoch=int(value["leader_epoch"]),
            metadata=value["metadata"],
            commit_timestamp_ms=int(value["commit_ts"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise InvalidGroupRecord(key, f"malformed offset: {error}") from error


def _versioned(key: bytes, raw: bytes) -> dict[str, Any]:
    value = _loads(key, raw)
    if not isinstance(value, dict):
        raise InvalidGroupRecord(key, "value is not an object")
    if value.get("v") != FORMAT_VERSION:
        raise InvalidGroupRecord(key, f"unsupported format version {value.get('v')!r}")
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _loads(key: bytes, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidGroupRecord(key, f"not JSON: {error}") from error


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
