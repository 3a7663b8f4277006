"""Where a job's sink lives: the name the coordinator and the driver give a participant's sink."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onceflow.contract.bindings import SinkBinding
from onceflow.contract.shards import WHOLE_SINK, Shard


@dataclass(frozen=True, slots=True)
class ParticipantRef:
    """A sink of a job, the gRPC target of the participant server hosting it, and what the job writes
    there (its bindings, from the job's ``[[outputs.<name>]]``; a participant has none of its own and
    refuses a transaction without any).

    A sink served by several participant processes has one ref per process, each with its
    ``shard`` (index and count) and target, and the same bindings; :meth:`shards_of` builds them.
    """

    sink: str
    target: str
    bindings: tuple[SinkBinding, ...] = ()
    shard: Shard = WHOLE_SINK

    @property
    def name(self) -> str:
        """The participant's name in a transaction (votes, acks, logs): the sink, or ``<sink>#<index>``."""
        return self.shard.record_name(self.sink)

    @classmethod
    def shards_of(
        cls, sink: str, targets: Sequence[str], bindings: Sequence[SinkBinding] = ()
    ) -> tuple[ParticipantRef, ...]:
        """One ref per target: shard ``i`` of ``len(targets)`` is served at ``targets[i]`` (one target:
        the sink is not sharded). ValueError for no targets or more than :data:`MAX_SHARDS`."""
        if not targets:
            raise ValueError(f"sink {sink!r} needs at least one participant target")
        count = len(targets)
        return tuple(cls(sink, target, tuple(bindings), Shard(index, count)) for index, target in enumerate(targets))
