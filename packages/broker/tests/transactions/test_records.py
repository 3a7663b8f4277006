"""The transaction log's record format: round trips, and damaged records are named, not guessed at."""

from __future__ import annotations

import pytest

from onceflow.broker.transactions import InvalidTransactionRecord, KafkaTransactionState, TransactionMetadata
from onceflow.broker.transactions.records import decode, encode_key, encode_value


def test_every_stored_state_round_trips() -> None:
    base = TransactionMetadata.new("tx", 7, 60_000, 1_000).with_producer(7, 0, -1, 60_000, 1_000)
    ongoing = base.with_added(2_000, [("t", 1), ("t", 0)], ["g"])
    for metadata in (base, ongoing, ongoing.prepared(True, 3_000), ongoing.fenced(3_000, recoverable=True)):
        assert decode(encode_key("tx"), encode_value(metadata)) == metadata
    assert ongoing.fenced(3_000, recoverable=True).producer_epoch == 1
    assert ongoing.fenced(3_000, recoverable=True).last_producer_epoch == 0


def test_unknown_version_or_malformed_value_is_rejected() -> None:
    with pytest.raises(InvalidTransactionRecord):
        decode(b"tx", b'{"v": 99}')
    with pytest.raises(InvalidTransactionRecord):
        decode(b"tx", b'{"v": 1, "state": "Ongoing"}')
    with pytest.raises(InvalidTransactionRecord):
        decode(b"tx", b"\xff not json")
    with pytest.raises(ValueError, match="never logged"):
        encode_value(TransactionMetadata("tx", 1, 0, 1000, KafkaTransactionState.DEAD, 0))
