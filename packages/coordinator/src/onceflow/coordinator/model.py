"""The coordinator's domain values: transaction ids, states, staged files, participants, transactions, jobs.

All values are immutable; the engine replaces them (``dataclasses.replace``) as a transaction moves
``PREPARING -> COMMITTING -> COMMITTED`` or ``PREPARING -> ABORTING -> ABORTED``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from onceflow.core.contract import SinkBinding, TransactionId
from onceflow.core.staging import StagedFile

#: A job name: letters, digits, ``.``, ``_``, ``-``; no ``:`` (it separates job and batch in ids).
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
#: ``job`` is reserved: ``job:<name>`` is the log key of a job's state.
RESERVED_JOB_NAMES = frozenset({"job"})
SHA256_HEX = re.compile(r"[0-9a-f]{64}")

__all__ = [
    "JOB_NAME",
    "RESERVED_JOB_NAMES",
    "SHA256_HEX",
    "JobState",
    "ParticipantRef",
    "ParticipantVote",
    "Resolution",
    "StagedFile",
    "Transaction",
    "TransactionId",
    "TransactionOutcome",
    "TransactionState",
]


class TransactionState(enum.Enum):
    """States of a presumed-abort 2PC transaction (docs/design.md, "The coordinator")."""

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
        return self in (TransactionState.COMMITTING, TransactionState.COMMITTED)


class Resolution(enum.Enum):
    """An operator's verdict for a stuck transaction."""

    COMMIT = "commit"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class ParticipantRef:
    """A sink of a job, the gRPC target of the participant server hosting it, and what the job writes
    there (its bindings; none = the sink's default binding)."""

    sink: str
    target: str
    bindings: tuple[SinkBinding, ...] = ()


@dataclass(frozen=True, slots=True)
class ParticipantVote:
    """What one participant said in this attempt: its vote, whether it acked the decision, its last error."""

    sink: str
    prepared: bool = False
    acknowledged: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class Transaction:
    """One attempt of a transaction and everything recovery needs: the files and the participants' targets."""

    id: TransactionId
    state: TransactionState
    writer_epoch: int
    files: tuple[StagedFile, ...]
    participants: tuple[ParticipantRef, ...]
    votes: tuple[ParticipantVote, ...] = ()
    started_at: float = 0.0
    updated_at: float = 0.0
    reason: str = ""
    #: 1 for the first attempt; a batch retried after an abort gets a new attempt.
    attempt: int = 1

    def vote_of(self, sink: str) -> ParticipantVote:
        for vote in self.votes:
            if vote.sink == sink:
                return vote
        return ParticipantVote(sink)

    def unacknowledged(self) -> tuple[ParticipantRef, ...]:
        """Participants that have not acked the decision yet."""
        return tuple(ref for ref in self.participants if not self.vote_of(ref.sink).acknowledged)


@dataclass(frozen=True, slots=True)
class TransactionOutcome:
    """What CommitTransaction, AbortTransaction and ResolveTransaction answer: the state and, if aborted, why."""

    state: TransactionState
    reason: str = ""


@dataclass(frozen=True, slots=True)
class JobState:
    """Per job: the current writer epoch (and who holds it), the last committed batch, the participants."""

    job: str
    epoch: int = 0
    writer_id: str = ""
    last_committed_batch: int = -1
    participants: tuple[ParticipantRef, ...] = field(default_factory=tuple)
