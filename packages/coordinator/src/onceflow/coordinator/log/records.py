"""The transaction log's record format: key = ``<job>:<batch>``, ``job:<job>`` or ``log:<marker>``,
value = versioned JSON.

Every value is a full snapshot of its transaction or job (not a delta), so a compacted topic that
keeps only the newest value per key still replays to the same state. A ``None`` value is a
tombstone: the transaction was garbage-collected. A :class:`LogMarker` is about the log itself
(its genesis, the proof that an instance still owns it); the log keeps it to itself and never
hands it to the state it replays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from onceflow.contract import (
    DEFAULT_OUTPUT,
    ParticipantRef,
    ParticipantVote,
    Shard,
    SinkBinding,
    TransactionId,
    TransactionState,
)
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.exceptions import TransactionLogError
from onceflow.coordinator.model import JobState, Transaction

#: Version of the JSON value format. Readers reject versions they do not know.
FORMAT_VERSION: Final = 1
JOB_KEY_PREFIX: Final = "job:"
#: Markers are keyed ``log:<kind>``: never a transaction id, whose batch is a number.
MARKER_KEY_PREFIX: Final = "log:"


@dataclass(frozen=True, slots=True)
class Tombstone:
    """Removes the transaction ``id`` from the log (compaction drops it for good)."""

    id: TransactionId


@dataclass(frozen=True, slots=True)
class LogMarker:
    """A record about the log itself, written by the coordinator instance ``instance`` at ``at``.

    - ``genesis``: the log's first record, written once when the log is initialised (``onceflow txn
      init-log``, ``onceflow txn rebuild``): a log without it was re-created or lost its head.
    - ``owner``: an instance proving that it still owns the log (a write fails once it is fenced).
    """

    kind: Literal["genesis", "owner"]
    instance: str
    at: float


#: What the coordinator's state is replayed from and made of.
LogRecord = JobState | Transaction | Tombstone
#: Everything the log holds: the state's records and the log's own markers.
WireRecord = LogRecord | LogMarker


def record_key(record: WireRecord) -> str:
    """The compaction key of ``record``."""
    if isinstance(record, JobState):
        return JOB_KEY_PREFIX + record.job
    if isinstance(record, LogMarker):
        return MARKER_KEY_PREFIX + record.kind
    return str(record.id)


def encode(record: WireRecord) -> tuple[bytes, bytes | None]:
    """``(key, value)`` bytes of ``record``; the value of a tombstone is None."""
    key = record_key(record).encode()
    if isinstance(record, Tombstone):
        return key, None
    if isinstance(record, LogMarker):
        doc: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "type": "marker",
            "kind": record.kind,
            "instance": record.instance,
            "at": record.at,
        }
    elif isinstance(record, JobState):
        doc = {
            "v": FORMAT_VERSION,
            "type": "job",
            "job": record.job,
            "epoch": record.epoch,
            "writer_id": record.writer_id,
            "last_committed_batch": record.last_committed_batch,
            "participants": [_ref_doc(p) for p in record.participants],
        }
    else:
        doc = {
            "v": FORMAT_VERSION,
            "type": "txn",
            "job": record.id.job,
            "batch": record.id.batch,
            "state": record.state.value,
            "writer_epoch": record.writer_epoch,
            "attempt": record.attempt,
            "files": [{"uri": f.uri, "count": f.count, "sha256": f.sha256, "output": f.output} for f in record.files],
            "participants": [_ref_doc(p) for p in record.participants],
            "votes": [
                {"sink": v.sink, "prepared": v.prepared, "acknowledged": v.acknowledged, "error": v.error}
                for v in record.votes
            ],
            "started_at": record.started_at,
            "updated_at": record.updated_at,
            "reason": record.reason,
        }
    return key, json.dumps(doc, separators=(",", ":")).encode()


def _ref_doc(ref: ParticipantRef) -> dict[str, Any]:
    doc: dict[str, Any] = {"sink": ref.sink, "target": ref.target}
    if ref.bindings:
        doc["bindings"] = [b.to_dict() for b in ref.bindings]
    if ref.shard.is_sharded:
        doc["shard"] = [ref.shard.index, ref.shard.count]
    return doc


def _ref(doc: dict[str, Any]) -> ParticipantRef:
    """A participant ref; records written before bindings (or shards) existed have none (the default
    binding, the whole sink)."""
    bindings = tuple(SinkBinding.from_dict(b) for b in doc.get("bindings", ()))
    index, count = doc.get("shard", (0, 1))
    return ParticipantRef(doc["sink"], doc["target"], bindings, Shard(int(index), int(count)))


def decode(key: bytes, value: bytes | None) -> WireRecord:
    """The record stored under ``key``; raises :class:`TransactionLogError` for garbage or unknown versions."""
    text = key.decode(errors="replace")
    try:
        if value is None:
            if text.startswith(JOB_KEY_PREFIX):
                raise ValueError("job records are never deleted")
            return Tombstone(TransactionId.parse(text))
        doc = json.loads(value)
        if doc.get("v") != FORMAT_VERSION:
            raise ValueError(f"unknown format version {doc.get('v')!r} (this coordinator reads {FORMAT_VERSION})")
        if doc["type"] == "marker":
            if doc["kind"] not in ("genesis", "owner"):
                raise ValueError(f"unknown marker kind {doc['kind']!r}")
            return LogMarker(doc["kind"], str(doc["instance"]), float(doc["at"]))
        if doc["type"] == "job":
            return JobState(
                job=doc["job"],
                epoch=int(doc["epoch"]),
                writer_id=doc["writer_id"],
                last_committed_batch=int(doc["last_committed_batch"]),
                participants=tuple(_ref(p) for p in doc["participants"]),
            )
        if doc["type"] == "txn":
            return Transaction(
                id=TransactionId(doc["job"], int(doc["batch"])),
                state=TransactionState(doc["state"]),
                writer_epoch=int(doc["writer_epoch"]),
                attempt=int(doc["attempt"]),
                files=tuple(
                    StagedFile(f["uri"], int(f["count"]), f["sha256"], f.get("output") or DEFAULT_OUTPUT)
                    for f in doc["files"]
                ),
                participants=tuple(_ref(p) for p in doc["participants"]),
                votes=tuple(
                    ParticipantVote(v["sink"], bool(v["prepared"]), bool(v["acknowledged"]), v["error"])
                    for v in doc["votes"]
                ),
                started_at=float(doc["started_at"]),
                updated_at=float(doc["updated_at"]),
                reason=doc["reason"],
            )
        raise ValueError(f"unknown record type {doc['type']!r}")
    except (ValueError, KeyError, TypeError) as exc:
        raise TransactionLogError(f"undecodable transaction log record {text!r}: {exc}") from None
