"""Source offsets: where each source partition of each connector was last committed.

Records are keyed as in Kafka Connect: key = JSON ``[connector, source-partition]``, value = JSON
source offset, or null (a tombstone) for a reset partition. Keys are canonical JSON (sorted keys, no
spaces) so that compaction and lookups see one key per partition.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from onceflow.core.errors import CorruptRecord
from onceflow.core.fsync import replace_durably

Partition = Mapping[str, Any]
Offset = Mapping[str, Any]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def encode_offset_key(connector: str, partition: Partition) -> bytes:
    return _canonical([connector, dict(partition)])


def encode_offset_value(offset: Offset | None) -> bytes | None:
    return None if offset is None else _canonical(dict(offset))


def decode_offset_key(key: bytes) -> tuple[str, dict[str, Any]]:
    """``(connector, partition)`` of an offsets-topic key; raises CorruptRecord for anything else."""
    try:
        doc = json.loads(key)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptRecord(f"offset key is not JSON: {key[:80]!r}") from exc
    if not (isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], str) and isinstance(doc[1], dict)):
        raise CorruptRecord(f"offset key is not [connector, partition]: {key[:80]!r}")
    return doc[0], doc[1]


def decode_offset_value(value: bytes | None) -> dict[str, Any] | None:
    if value is None:
        return None
    doc = json.loads(value)
    if not isinstance(doc, dict):
        raise CorruptRecord(f"offset value is not a JSON object: {value[:80]!r}")
    return doc


class OffsetBackingStore(ABC):
    """Committed source offsets of every connector. Thread-safe."""

    def start(self) -> None:  # noqa: B027 - optional hook
        """Load what is stored; the default has nothing to load."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release resources; the default has none."""

    @abstractmethod
    def offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every ``(partition, offset)`` of ``connector`` as committed now (reset partitions excluded)."""

    @abstractmethod
    def write(self, connector: str, offsets: Iterable[tuple[Partition, Offset | None]]) -> None:
        """Durably store ``offsets``; a None offset resets (forgets) that partition."""


class MemoryOffsetBackingStore(OffsetBackingStore):
    """Offsets in a dict; gone with the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[bytes, dict[str, Any]] = {}

    def offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        with self._lock:
            items = list(self._data.items())
        result = []
        for key, offset in items:
            name, partition = decode_offset_key(key)
            if name == connector:
                result.append((partition, dict(offset)))
        return result

    def write(self, connector: str, offsets: Iterable[tuple[Partition, Offset | None]]) -> None:
        with self._lock:
            for partition, offset in offsets:
                key = encode_offset_key(connector, partition)
                if offset is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = dict(offset)
            self._persist()

    def _persist(self) -> None:
        """Hook for subclasses that keep the dict somewhere (called with the lock held)."""


class FileOffsetBackingStore(MemoryOffsetBackingStore):
    """Offsets in a JSON file, rewritten atomically (temp file + rename) on every write."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)

    def start(self) -> None:
        if not self.path.exists():
            return
        doc = json.loads(self.path.read_text() or "[]")
        with self._lock:
            self._data = {_canonical(entry["key"]): entry["offset"] for entry in doc}

    def _persist(self) -> None:
        doc = [{"key": json.loads(key), "offset": offset} for key, offset in self._data.items()]
        replace_durably(self.path, json.dumps(doc).encode(), tmp=self.path.with_name(self.path.name + ".tmp"))
