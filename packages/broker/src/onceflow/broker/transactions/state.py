"""``TransactionState``: the states of a transactional id, and the transitions between them (KIP-98)."""

from __future__ import annotations

from enum import Enum


class TransactionState(Enum):
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
        return self in {TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT}

    @property
    def is_idle(self) -> bool:
        """No transaction in progress: a new one may start, and the id may expire."""
        return self in _IDLE

    def can_become(self, target: TransactionState) -> bool:
        """Whether the state machine has the transition ``self -> target``."""
        return self in _SOURCES[target]


_IDLE = frozenset({TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT})

_SOURCES: dict[TransactionState, frozenset[TransactionState]] = {
    TransactionState.EMPTY: _IDLE,
    TransactionState.ONGOING: _IDLE | {TransactionState.ONGOING},
    TransactionState.PREPARE_COMMIT: frozenset({TransactionState.ONGOING}),
    TransactionState.PREPARE_ABORT: frozenset({TransactionState.ONGOING, TransactionState.PREPARE_EPOCH_FENCE}),
    TransactionState.COMPLETE_COMMIT: frozenset({TransactionState.PREPARE_COMMIT}),
    TransactionState.COMPLETE_ABORT: frozenset({TransactionState.PREPARE_ABORT}),
    TransactionState.DEAD: _IDLE,
    TransactionState.PREPARE_EPOCH_FENCE: frozenset({TransactionState.ONGOING}),
}
