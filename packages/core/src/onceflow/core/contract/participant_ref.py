"""Where a job's sink lives: the name the coordinator and the driver give a participant's sink."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.core.contract.bindings import SinkBinding


@dataclass(frozen=True, slots=True)
class ParticipantRef:
    """A sink of a job, the gRPC target of the participant server hosting it, and what the job writes
    there (its bindings; none = the sink's default binding, the IP-count results)."""

    sink: str
    target: str
    bindings: tuple[SinkBinding, ...] = ()
