"""``KafkaTransactionState``: the states of a Kafka transactional id, and the transitions between them (KIP-98)."""

from __future__ import annotations

from enum import Enum


class KafkaTransactionState(Enum):
    """The state of a transactional id; the values are the names Kafka's ListTransactions reports.

    ``PrepareEpochFence`` exists in Kafka only as an in-memory pending state; this coordinator never
    stores it (a fence is logged directly as PrepareAbort with the bumped epoch), but it is a valid
    ListTransactions filter.
    """

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    @property
    def is_prepared(self) -> bool:
        """A decided transaction whose markers may not all be written yet."""
        return self in {KafkaTransactionState.PREPARE_COMMIT, KafkaTransactionState.PREPARE_ABORT}

    @property
    def is_idle(self) -> bool:
        """No transaction in progress: a new one may start, and the id may expire."""
        return self in _IDLE

    def can_become(self, target: KafkaTransactionState) -> bool:
        """Whether the state machine has the transition ``self -> target``."""
        return self in _SOURCES[target]


_IDLE = frozenset(
    {KafkaTransactionState.EMPTY, KafkaTransactionState.COMPLETE_COMMIT, KafkaTransactionState.COMPLETE_ABORT}
)

_SOURCES: dict[KafkaTransactionState, frozenset[KafkaTransactionState]] = {
    KafkaTransactionState.EMPTY: _IDLE,
    KafkaTransactionState.ONGOING: _IDLE | {KafkaTransactionState.ONGOING},
    KafkaTransactionState.PREPARE_COMMIT: frozenset({KafkaTransactionState.ONGOING}),
    KafkaTransactionState.PREPARE_ABORT: frozenset(
        {KafkaTransactionState.ONGOING, KafkaTransactionState.PREPARE_EPOCH_FENCE}
    ),
    KafkaTransactionState.COMPLETE_COMMIT: frozenset({KafkaTransactionState.PREPARE_COMMIT}),
    KafkaTransactionState.COMPLETE_ABORT: frozenset({KafkaTransactionState.PREPARE_ABORT}),
    KafkaTransactionState.DEAD: _IDLE,
    KafkaTransactionState.PREPARE_EPOCH_FENCE: frozenset({KafkaTransactionState.ONGOING}),
}
