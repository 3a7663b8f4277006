"""The transaction state machine: which state may follow which, and what a transition answers."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

from onceflow.contract import TransactionOutcome, TransactionState
from onceflow.coordinator.exceptions import InvalidTransition
from onceflow.coordinator.model import Transaction

#: The states a transaction may move to from its current one (None: the log does not know it).
_NEXT_STATES: Final[dict[TransactionState | None, frozenset[TransactionState]]] = {
    None: frozenset(
        {TransactionState.PREPARING, TransactionState.ABORTED}
    ),  # a first attempt; an operator's abort of an unknown batch
    TransactionState.PREPARING: frozenset({TransactionState.COMMITTING, TransactionState.ABORTING}),
    TransactionState.COMMITTING: frozenset({TransactionState.COMMITTED}),
    TransactionState.ABORTING: frozenset({TransactionState.ABORTED}),
    TransactionState.ABORTED: frozenset(
        {TransactionState.PREPARING}
    ),  # a batch retried after an abort is a new attempt
    TransactionState.COMMITTED: frozenset(),
}
#: Not final yet: the in-doubt states.
IN_DOUBT: Final = (TransactionState.PREPARING, TransactionState.ABORTING, TransactionState.COMMITTING)


def check_transition(current: Transaction | None, target: Transaction) -> Transaction:
    """``target`` if its state may follow ``current``'s (None: unknown); :class:`InvalidTransition` if not."""
    before = current.state if current is not None else None
    if target.state not in _NEXT_STATES[before]:
        raise InvalidTransition(str(target.id), before.value if before else "unknown", target.state.value)
    return target


@dataclass(frozen=True, slots=True)
class Begun:
    """A new attempt, PREPARING: its Prepare calls may be sent."""

    txn: Transaction


@dataclass(frozen=True, slots=True)
class InFlight:
    """An attempt already under way (or being delivered): wait for it instead of starting another."""

    txn: Transaction
    settled: threading.Event


@dataclass(frozen=True, slots=True)
class Answered:
    """The batch needs no attempt. ``recommitted``: it has a COMMITTED record, so the replayed batch
    staged its files again and they should be collected."""

    outcome: TransactionOutcome
    recommitted: bool = False


#: What :meth:`TransactionStateManager.begin` answers.
Admission = Begun | InFlight | Answered


@dataclass(frozen=True, slots=True)
class AbortRequested:
    """An abort under way: ``settled`` is set once the transaction is final; ``logged`` says that
    this request logged ABORTING (the attempt's own flow sends the Aborts)."""

    settled: threading.Event
    logged: bool
