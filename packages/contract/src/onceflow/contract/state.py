"""The states of a two-phase-commit transaction and an operator's verdict, as every process names them."""

from __future__ import annotations

import enum


class TransactionState(enum.Enum):
    """States of a presumed-abort 2PC transaction (docs/design.md, "The coordinator").

    ``PREPARING -> COMMITTING -> COMMITTED`` or ``PREPARING -> ABORTING -> ABORTED``. A transaction the
    coordinator does not know has no state (presumed abort).
    """

    PREPARING = "PREPARING"
    COMMITTING = "COMMITTING"
    COMMITTED = "COMMITTED"
    ABORTING = "ABORTING"
    ABORTED = "ABORTED"

    @property
    def is_final(self) -> bool:
        """COMMITTED or ABORTED: nothing more will happen to this attempt."""
        return self in (TransactionState.COMMITTED, TransactionState.ABORTED)

    @property
    def is_decided(self) -> bool:
        """Past the decision: the outcome can no longer change."""
        return self is not TransactionState.PREPARING

    @property
    def is_commit(self) -> bool:
        """COMMITTING or COMMITTED: the commit is decided (COMMITTING only delivers it)."""
        return self in (TransactionState.COMMITTING, TransactionState.COMMITTED)


class Resolution(enum.Enum):
    """An operator's verdict for a stuck transaction."""

    COMMIT = "commit"
    ABORT = "abort"
