"""``TransactionMetadata``: everything the coordinator knows about one transactional id.

Values are immutable; every transition returns a new value and checks the state machine, so a
value read from the log or handed to a caller never changes underneath it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from onceflow.broker.transactions.exceptions import IllegalTransactionTransition
from onceflow.broker.transactions.state import KafkaTransactionState

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32767  # Java's Short.MAX_VALUE: the largest epoch on the wire
NO_START_TIME = -1

TopicPartition = tuple[str, int]


def is_epoch_exhausted(epoch: int) -> bool:
    """Whether no further epoch may be handed to a client (one is kept back for fencing), as in Kafka."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(frozen=True)
class TransactionMetadata:
    """The state of one transactional id.

    * ``producer_id``/``producer_epoch``: the current owner. ``prev_producer_id`` is the id before the
      last rotation (epoch overflow), so that a retried InitProducerId of the old id is recognised.
    * ``last_producer_epoch``: the epoch before the last bump when that bump may be retried or recovered
      from (KIP-360, KIP-588); ``-1`` once a new producer instance took over.
    * ``partitions`` and ``groups``: what the open (or prepared) transaction touched; empty when idle.
    * ``start_time_ms``: when the current (or last) transaction began; ``-1`` before the first one.
    * ``last_update_ms``: the last transition, for transactional id expiration.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: KafkaTransactionState
    last_update_ms: int
    prev_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)
    start_time_ms: int = NO_START_TIME

    @classmethod
    def new(cls, transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int) -> TransactionMetadata:
        """A just-created id that has not been handed out yet (epoch -1: the first bump gives 0)."""
        return cls(transactional_id, producer_id, NO_PRODUCER_EPOCH, timeout_ms, KafkaTransactionState.EMPTY, now_ms)

    def log_fields(self) -> dict[str, object]:
        """The ids every log line about this transactional id carries: ``transactional_id=``, ``pid=``, ``epoch=``."""
        return {"transactional_id": self.transactional_id, "pid": self.producer_id, "epoch": self.producer_epoch}

    def _to(self, target: KafkaTransactionState, **changes: Any) -> TransactionMetadata:
        if not self.state.can_become(target):
            raise IllegalTransactionTransition(self.transactional_id, self.state.value, target.value)
        return replace(self, state=target, **changes)

    def with_producer(
        self, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int, now_ms: int
    ) -> TransactionMetadata:
        """Empty, owned by ``(producer_id, epoch)``: the result of InitProducerId."""
        prev = self.producer_id if producer_id != self.producer_id else self.prev_producer_id
        return self._to(
            KafkaTransactionState.EMPTY,
            producer_id=producer_id,
            prev_producer_id=prev,
            producer_epoch=epoch,
            last_producer_epoch=last_epoch,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            groups=frozenset(),
            start_time_ms=NO_START_TIME,
            last_update_ms=now_ms,
        )

    def with_added(
        self, now_ms: int, partitions: Iterable[TopicPartition] = (), groups: Iterable[str] = ()
    ) -> TransactionMetadata:
        """Ongoing, with more partitions or groups; the first addition starts the transaction's clock."""
        started = self.state is KafkaTransactionState.ONGOING
        return self._to(
            KafkaTransactionState.ONGOING,
            partitions=self.partitions | frozenset(partitions),
            groups=self.groups | frozenset(groups),
            start_time_ms=self.start_time_ms if started else now_ms,
            last_update_ms=now_ms,
        )

    def prepared(self, commit: bool, now_ms: int) -> TransactionMetadata:
        """PrepareCommit or PrepareAbort: the outcome is decided."""
        target = KafkaTransactionState.PREPARE_COMMIT if commit else KafkaTransactionState.PREPARE_ABORT
        return self._to(target, last_update_ms=now_ms)

    def fenced(self, now_ms: int, *, recoverable: bool) -> TransactionMetadata:
        """PrepareAbort with the epoch bumped, so that the current owner's next call is fenced.

        With ``recoverable`` (a timeout abort, KIP-588) the old epoch is kept as ``last_producer_epoch``,
        so the owner may re-initialise with it; otherwise (a new instance took over) it may not. The
        epoch never passes ``MAX_PRODUCER_EPOCH``.
        """
        epoch = min(self.producer_epoch + 1, MAX_PRODUCER_EPOCH)
        last = self.producer_epoch if recoverable else NO_PRODUCER_EPOCH
        fence = self._to(KafkaTransactionState.PREPARE_EPOCH_FENCE, producer_epoch=epoch, last_producer_epoch=last)
        return fence._to(KafkaTransactionState.PREPARE_ABORT, last_update_ms=now_ms)

    def completed(self, now_ms: int) -> TransactionMetadata:
        """CompleteCommit or CompleteAbort: every marker is written; the partitions are cleared."""
        target = (
            KafkaTransactionState.COMPLETE_COMMIT
            if self.state is KafkaTransactionState.PREPARE_COMMIT
            else KafkaTransactionState.COMPLETE_ABORT
        )
        return self._to(target, partitions=frozenset(), groups=frozenset(), last_update_ms=now_ms)

    def dead(self) -> TransactionMetadata:
        """Dead: the id expired and is being removed."""
        return self._to(KafkaTransactionState.DEAD, partitions=frozenset(), groups=frozenset())

    def topics(self) -> dict[str, list[int]]:
        """The transaction's partitions grouped by topic, sorted."""
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(self.partitions):
            topics.setdefault(topic, []).append(partition)
        return topics
