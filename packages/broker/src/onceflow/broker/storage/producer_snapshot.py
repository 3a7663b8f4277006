"""Producer-state snapshot files: ``<offset, 20 digits>.snapshot`` in the partition directory.

A snapshot holds every producer entry as of ``offset`` (the next offset to replay from). Format: a
4-byte big-endian CRC32C followed by UTF-8 JSON. It is written atomically (temporary file, fsync,
rename, fsync of the directory), so a reader sees either the old or the new file, never a torn one;
the CRC still guards against media damage, and an unreadable snapshot only costs a longer replay.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from pathlib import Path

from crc32c import crc32c

from onceflow.broker.storage.producer_entry import BatchMetadata, ProducerEntry
from onceflow.core.fsync import replace_durably
from onceflow.core.logging import get_logger

log = get_logger(__name__)

SUFFIX = ".snapshot"
KEEP = 2
_VERSION = 1


def snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the snapshot files present, ascending."""
    offsets = []
    for path in directory.glob(f"*{SUFFIX}"):
        stem = path.name[: -len(SUFFIX)]
        if stem.isdigit():
            offsets.append(int(stem))
    return sorted(offsets)


def _path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def write(directory: Path, offset: int, entries: Iterable[ProducerEntry]) -> Path:
    """Atomically write a snapshot at ``offset`` and delete all but the newest ``KEEP``."""
    document = {
        "version": _VERSION,
        "offset": offset,
        "producers": [
            [
                e.producer_id,
                e.producer_epoch,
                e.coordinator_epoch,
                e.current_txn_first_offset,
                e.last_timestamp_ms,
                [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp_ms] for b in e.batches],
            ]
            for e in entries
        ],
    }
    payload = json.dumps(document, separators=(",", ":")).encode()
    final = _path(directory, offset)
    replace_durably(final, struct.pack(">I", crc32c(payload)) + payload, tmp=final.with_name(final.name + ".tmp"))
    for old in snapshot_offsets(directory)[:-KEEP]:
        _path(directory, old).unlink(missing_ok=True)
    return final


def _parse(data: bytes) -> tuple[int, list[ProducerEntry]]:
    if len(data) < 4 or struct.unpack_from(">I", data)[0] != crc32c(data[4:]):
        raise ValueError("CRC mismatch")
    document = json.loads(data[4:])
    if document.get("version") != _VERSION:
        raise ValueError(f"unknown snapshot version {document.get('version')}")
    entries = [
        ProducerEntry(
            producer_id=pid,
            producer_epoch=epoch,
            batches=tuple(BatchMetadata(*b) for b in batches),
            coordinator_epoch=coordinator_epoch,
            current_txn_first_offset=txn_first,
            last_timestamp_ms=last_ts,
        )
        for pid, epoch, coordinator_epoch, txn_first, last_ts, batches in document["producers"]
    ]
    return int(document["offset"]), entries


def read_latest(directory: Path, max_offset: int) -> tuple[int, list[ProducerEntry]] | None:
    """The newest readable snapshot at or below ``max_offset``; newer or unreadable ones are deleted."""
    for tmp in directory.glob(f"*{SUFFIX}.tmp"):
        tmp.unlink(missing_ok=True)
    for offset in reversed(snapshot_offsets(directory)):
        path = _path(directory, offset)
        if offset > max_offset:
            path.unlink(missing_ok=True)
            continue
        try:
            return _parse(path.read_bytes())
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("storage.producer_snapshot_unreadable", path=path, reason=repr(str(exc)))
            path.unlink(missing_ok=True)
    return None
