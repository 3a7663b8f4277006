"""The records of the transaction log, and their encoding.

One record per transactional id: the key is the id (UTF-8); the value is the id's whole
``TransactionMetadata`` as a compact JSON object with a format version ``"v"`` (currently 1), so that
the last record of a key is its state. A ``None`` value (tombstone) removes an expired id.
"""

from __future__ import annotations

import json
from typing import Any

from onceflow.broker.transactions.exceptions import InvalidTransactionRecord
from onceflow.broker.transactions.metadata import TransactionMetadata
from onceflow.broker.transactions.state import KafkaTransactionState

FORMAT_VERSION = 1

# States a record may hold: PrepareEpochFence is never logged, and Dead ids are tombstoned.
_STORABLE = frozenset(KafkaTransactionState) - {KafkaTransactionState.PREPARE_EPOCH_FENCE, KafkaTransactionState.DEAD}


def encode_key(transactional_id: str) -> bytes:
    """The log key of a transactional id."""
    return transactional_id.encode()


def encode_value(metadata: TransactionMetadata) -> bytes:
    """The log value holding ``metadata``."""
    if metadata.state not in _STORABLE:
        raise ValueError(f"state {metadata.state.value} is never logged")
    document = {
        "v": FORMAT_VERSION,
        "state": metadata.state.value,
        "pid": metadata.producer_id,
        "epoch": metadata.producer_epoch,
        "prev_pid": metadata.prev_producer_id,
        "last_epoch": metadata.last_producer_epoch,
        "timeout_ms": metadata.timeout_ms,
        "partitions": sorted([topic, partition] for topic, partition in metadata.partitions),
        "groups": sorted(metadata.groups),
        "start_ms": metadata.start_time_ms,
        "update_ms": metadata.last_update_ms,
    }
    return json.dumps(document, separators=(",", ":")).encode()


def decode(key: bytes, value: bytes) -> TransactionMetadata:
    """The metadata a record holds; raises ``InvalidTransactionRecord`` if it cannot be read."""
    try:
        transactional_id = key.decode()
        document: Any = json.loads(value)
    except (UnicodeDecodeError, ValueError) as error:
        raise InvalidTransactionRecord(key, f"not UTF-8 JSON: {error}") from error
    if not isinstance(document, dict) or document.get("v") != FORMAT_VERSION:
        raise InvalidTransactionRecord(key, f"unknown format version in {value[:80]!r}")
    try:
        state = KafkaTransactionState(document["state"])
        if state not in _STORABLE:
            raise ValueError(f"state {state.value} is never logged")
        return TransactionMetadata(
            transactional_id=transactional_id,
            producer_id=_int(document["pid"]),
            producer_epoch=_int(document["epoch"]),
            timeout_ms=_int(document["timeout_ms"]),
            state=state,
            last_update_ms=_int(document["update_ms"]),
            prev_producer_id=_int(document["prev_pid"]),
            last_producer_epoch=_int(document["last_epoch"]),
            partitions=frozenset((str(topic), _int(partition)) for topic, partition in document["partitions"]),
            groups=frozenset(str(group) for group in document["groups"]),
            start_time_ms=_int(document["start_ms"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise InvalidTransactionRecord(key, f"malformed value: {error!r}") from error


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, found {value!r}")
    return value
