"""What the coordinator answers about a transaction, as every process names it: the outcome of a
commit, abort or resolution, each participant's vote, and one attempt as GetTransaction and
ListTransactions report it (the coordinator keeps these values; the contract's client reads them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from onceflow.contract.state import TransactionState
from onceflow.contract.txn import TransactionId

if TYPE_CHECKING:  # staging imports the contract: a runtime import here would be circular
    from onceflow.contract.staging.files import StagedFile


@dataclass(frozen=True, slots=True)
class TransactionOutcome:
    """What CommitTransaction, AbortTransaction and ResolveTransaction answer: the state and, if aborted, why."""

    state: TransactionState
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ParticipantVote:
    """What one participant said in this attempt: its vote, whether it acked the decision, its last error.

    ``sink`` names the participant (:attr:`ParticipantRef.name`): the sink, or ``<sink>#<index>`` for
    a shard of a sharded sink."""

    sink: str
    prepared: bool = False
    acknowledged: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class TransactionReport:
    """One attempt of a transaction as the coordinator reports it (GetTransaction, ListTransactions):
    its state, the writer epoch and staged files it was committed with, every participant's vote,
    when it started and last changed (seconds since the epoch, 0: unknown) and why it aborted."""

    id: TransactionId
    state: TransactionState
    writer_epoch: int = 0
    files: tuple[StagedFile, ...] = ()
    votes: tuple[ParticipantVote, ...] = ()
    started_at: float = 0.0
    updated_at: float = 0.0
    reason: str = ""

    @property
    def rows(self) -> int:
        """The rows of all its staged files."""
        return sum(file.count for file in self.files)
