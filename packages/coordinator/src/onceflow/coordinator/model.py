"""The coordinator's domain values: transactions and jobs, over the contract's transaction ids, states,
votes, outcomes, staged files and participant refs (:mod:`onceflow.contract`, :mod:`onceflow.contract.staging`).

All values are immutable; the engine replaces them (``dataclasses.replace``) as a transaction moves
``PREPARING -> COMMITTING -> COMMITTED`` or ``PREPARING -> ABORTING -> ABORTED``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from onceflow.contract import ParticipantRef, ParticipantVote, TransactionId, TransactionReport, TransactionState
from onceflow.contract.staging import StagedFile

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
    "Transaction",
]


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

    def vote_of(self, name: str) -> ParticipantVote:
        """The vote of the participant named ``name`` (:attr:`ParticipantRef.name`: a sink or a shard of one)."""
        for vote in self.votes:
            if vote.sink == name:
                return vote
        return ParticipantVote(name)

    def unacknowledged(self) -> tuple[ParticipantRef, ...]:
        """Participants that have not acked the decision yet."""
        return tuple(ref for ref in self.participants if not self.vote_of(ref.name).acknowledged)

    def report(self) -> TransactionReport:
        """What GetTransaction and ListTransactions answer: one vote per participant, in their order."""
        return TransactionReport(
            id=self.id,
            state=self.state,
            writer_epoch=self.writer_epoch,
            files=self.files,
            votes=tuple(self.vote_of(ref.name) for ref in self.participants),
            started_at=self.started_at,
            updated_at=self.updated_at,
            reason=self.reason,
        )


@dataclass(frozen=True, slots=True)
class JobState:
    """Per job: the current writer epoch (and who holds it), the last committed batch, the participants."""

    job: str
    epoch: int = 0
    writer_id: str = ""
    last_committed_batch: int = -1
    participants: tuple[ParticipantRef, ...] = field(default_factory=tuple)
