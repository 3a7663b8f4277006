"""The dead-letter topic, tallied: how many lines or records were rejected, and why.

Every rejected line (the log producer) and undecodable record (the Spark job) is in the dead-letter
topic, read here with read_committed. The log producer names the kind of problem in the header
``onceflow.error.kind`` (``bad_timestamp``, ``bad_status``, ...); records without it (the Spark job's)
count as :data:`UNDECODABLE`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from onceflow.core.kafka import TopicNotFound, read_committed
from onceflow.core.settings import KafkaSettings

KIND_HEADER = "onceflow.error.kind"
#: The kind of a dead letter that names none (an undecodable record rejected by the Spark job).
UNDECODABLE = "undecodable"


@dataclass(frozen=True)
class DeadLetterTally:
    """The committed dead letters of ``topic``, in total and per kind."""

    topic: str
    by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())


def tally_dead_letters(kafka: KafkaSettings, topic: str, *, timeout: float = 120.0) -> DeadLetterTally:
    """Read ``topic`` to its end with read_committed and count its records per kind (a missing topic is empty)."""
    kinds: Counter[str] = Counter()
    try:
        for record in read_committed(kafka, topic, timeout=timeout):
            kind = record.header(KIND_HEADER)
            kinds[kind.decode("utf-8", "replace") if kind else UNDECODABLE] += 1
    except TopicNotFound:
        pass
    return DeadLetterTally(topic, dict(kinds))
