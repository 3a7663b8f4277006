"""How the coordinator talks to a sink participant (an extension point: gRPC, or in-process fakes)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from onceflow.contract import ParticipantRef, PrepareVote, TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.core.errors import OnceflowError


class ParticipantUnavailable(OnceflowError):  # noqa: N818
    """The participant could not be reached or did not answer in time (transient: retry later)."""

    def __init__(self, sink: str, reason: str) -> None:
        self.sink = sink
        self.reason = reason
        super().__init__(f"participant {sink!r} unavailable: {reason}")


class ParticipantFailed(OnceflowError):  # noqa: N818
    """The participant answered with an error other than a vote (retrying may or may not help)."""

    def __init__(self, sink: str, reason: str) -> None:
        self.sink = sink
        self.reason = reason
        super().__init__(f"participant {sink!r} failed: {reason}")


class BindingsRefused(OnceflowError):  # noqa: N818
    """A participant refused a job's bindings (a table that does not fit, an unsupported type)."""

    def __init__(self, sink: str, target: str, reason: str) -> None:
        self.sink = sink
        self.reason = reason
        super().__init__(f"participant {sink!r} at {target} refused the job's bindings: {reason}")


class ParticipantConnection(ABC):
    """One sink of a participant server, with Flink's two-phase-commit lifecycle.

    Contract (what the coordinator relies on):

    - :meth:`prepare` makes the batch durable in a form the sink can commit later and votes; a yes
      vote is a promise that a later :meth:`commit` will eventually succeed.
    - :meth:`commit` and :meth:`abort` are idempotent; aborting an unknown transaction succeeds.
    - Each call honours ``timeout`` (seconds); errors are :class:`ParticipantUnavailable` or
      :class:`ParticipantFailed`. A no vote is not an error: it is a :class:`PrepareVote`.
    - A shard of a sharded sink (``ref.shard``) gets only its share of the files; every call tells
      the participant which shard it is believed to be, and a participant that serves another
      share refuses it.
    """

    def __init__(self, ref: ParticipantRef) -> None:
        self.ref = ref

    @property
    def sink(self) -> str:
        return self.ref.sink

    @property
    def name(self) -> str:
        """The participant's name in votes and logs: the sink, or ``<sink>#<index>`` for a shard."""
        return self.ref.name

    @abstractmethod
    def prepare(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> PrepareVote:
        """Flink's ``preCommit``: make the batch durable, then vote."""

    @abstractmethod
    def commit(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> None:
        """Commit a prepared transaction; ``files`` let a participant that lost its prepared state redo it."""

    @abstractmethod
    def abort(self, txn: TransactionId, timeout: float) -> None:
        """Abort the transaction, prepared or not."""

    @abstractmethod
    def prepare_bindings(self, job: str, timeout: float) -> None:
        """Have the sink check (and create) the tables and topics of ``self.ref.bindings`` for ``job``
        (and, for a shard, that the participant serves that shard of the sink).

        Raises :class:`BindingsRefused` when they do not fit (the reason names table, column and
        mismatch), :class:`ParticipantUnavailable` when the participant cannot answer now.
        """

    def last_committed(self, job: str, timeout: float) -> int | None:
        """The newest batch of ``job`` the sink's own commit records show committed (-1: none), or
        None when the participant cannot tell (it keeps no such records, or did not answer)."""
        return None


class ParticipantConnector(ABC):
    """Hands out (and caches) a :class:`ParticipantConnection` per participant reference."""

    @abstractmethod
    def connect(self, ref: ParticipantRef) -> ParticipantConnection:
        """A client for ``ref``; cheap to call repeatedly (implementations cache)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Close every connection."""
