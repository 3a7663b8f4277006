"""End of input: the marker a bounded source writes after its last record, and how readers know it.

Flink ends a bounded source with a final watermark that closes every event-time window. Kafka has
no such thing, and a Spark watermark only moves when newer events arrive, so the last windows of a
finished file would stay in Spark state for ever. onceflow closes them with an *end-of-input
marker*: one record in every partition of each topic the source wrote, produced in a transaction of
its own after every record of the input is committed.

- Header :data:`HEADER` (value ``b"1"``), no key.
- Value: JSON ``{"source": "<connector>", "end_offsets": {"<partition>": <offset>, ...}}``, the high
  watermark of every partition of the topic once the input was complete: every record of the input
  sits below these offsets.

Readers:

- the ``onceflow-kafka`` Spark source turns a marker into an end-of-input row only in a micro-batch
  that reads every partition up to the marker's end offsets (so no record of the input can arrive
  after the final watermark); elsewhere it drops the marker. The job's watermark then jumps to
  :data:`END_OF_INPUT_TIME_MS` and the row itself is filtered out right after the watermark, so it
  never reaches a window or a sink;
- every other reader (the audit's recount, consumers) skips marker records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from onceflow.core.errors import SerializationError

HEADER: Final = "onceflow.end-of-input"
#: The event time of the end of input, as Flink's final watermark: the largest time Spark can hold
#: (9999-12-31T23:59:59.999Z). Every window ends before it.
END_OF_INPUT_TIME_MS: Final = 253_402_300_799_999


Headers = Iterable[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] | None


def is_marker(headers: Headers) -> bool:
    """Whether a record with these headers (a list of pairs or a mapping) is an end-of-input marker."""
    if headers is None:
        return False
    if isinstance(headers, Mapping):
        return HEADER in headers
    return any(name == HEADER for name, _ in headers)


@dataclass(frozen=True)
class EndOfInputMarker:
    """The value of a marker: who ended, and where the input ends in every partition of the topic."""

    source: str
    end_offsets: Mapping[int, int]

    def encode(self) -> bytes:
        doc = {"source": self.source, "end_offsets": {str(p): int(o) for p, o in sorted(self.end_offsets.items())}}
        return json.dumps(doc, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, value: bytes | None) -> EndOfInputMarker:
        """Raises SerializationError naming what is wrong with a marker's value."""
        try:
            doc = json.loads(value or b"")
            offsets = {int(p): int(o) for p, o in doc["end_offsets"].items()}
            return cls(str(doc["source"]), offsets)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SerializationError(f"not an end-of-input marker value: {exc}") from None

    def covered_by(self, read_until: Mapping[int, int]) -> bool:
        """True when a read up to ``read_until`` (exclusive, per partition) holds every record of the input."""
        return all(read_until.get(partition, 0) >= end for partition, end in self.end_offsets.items() if end > 0)
