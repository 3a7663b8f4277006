"""Read a whole topic back with headers and timestamps (the broker's test reader drops headers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Unpack

from onceflow.testing.broker.clients import ReadOptions, read_messages


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: dict[str, bytes]


def read_records(bootstrap: str, topic: str, **options: Unpack[ReadOptions]) -> list[Record]:
    """Every record of ``topic``, in offset order per partition, up to the end seen by its isolation level
    (:func:`~onceflow.testing.broker.clients.read_messages`; idle for 1 s unless ``idle_timeout`` says
    otherwise), with its timestamp and headers."""
    options.setdefault("idle_timeout", 1.0)
    records: list[Record] = []
    for msg in read_messages(bootstrap, topic, **options):
        partition, offset = msg.partition(), msg.offset()
        assert partition is not None and offset is not None
        headers: dict[str, bytes] = {}
        for header in msg.headers() or []:
            value = header[1]
            headers[header[0]] = value if isinstance(value, bytes) else (value or "").encode()
        records.append(Record(partition, offset, msg.key(), msg.value(), msg.timestamp()[1], headers))
    return records
