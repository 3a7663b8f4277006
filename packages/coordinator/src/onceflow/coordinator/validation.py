"""Argument checks of the coordinator's operations; a bad argument is an :class:`InvalidRequest` naming it.

Sizes are bounded here, at the edge (limits from :mod:`onceflow.core.request_limits`), so that no
request can make a log record larger than one append takes, which would stop the coordinator for
every job: every id (writer id, sink name, participant target) is at most :data:`MAX_ID_BYTES`, a
reason :data:`MAX_REASON_BYTES`, a job has at most :data:`MAX_PARTICIPANTS` participants, and a
transaction at most :data:`MAX_STAGED_FILES` staged files, each URI at most :data:`MAX_URI_BYTES`
and all of them together at most :data:`MAX_TOTAL_URI_BYTES`. The error message names the limit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from onceflow.contract import InvalidBinding, ParticipantRef
from onceflow.contract.shards import SHARD_SEPARATOR, check_shardable
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.exceptions import InvalidRequest
from onceflow.coordinator.model import JOB_NAME, RESERVED_JOB_NAMES
from onceflow.core.request_limits import (
    MAX_ID_BYTES,
    MAX_PARTICIPANTS,
    MAX_REASON_BYTES,
    MAX_STAGED_FILES,
    MAX_TOTAL_URI_BYTES,
    MAX_URI_BYTES,
    oversize,
)

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")

__all__ = [
    "MAX_ID_BYTES",
    "MAX_PARTICIPANTS",
    "MAX_REASON_BYTES",
    "MAX_STAGED_FILES",
    "MAX_TOTAL_URI_BYTES",
    "MAX_URI_BYTES",
    "check_batch",
    "check_epoch",
    "check_files",
    "check_job",
    "check_participants",
    "check_reason",
    "check_writer_id",
]


def _check_size(field: str, value: str, limit: int) -> str:
    problem = oversize(value, limit)
    if problem is not None:
        raise InvalidRequest(field, problem)
    return value


def check_writer_id(writer_id: str) -> str:
    return _check_size("writer_id", writer_id, MAX_ID_BYTES)


def check_reason(reason: str) -> str:
    return _check_size("reason", reason, MAX_REASON_BYTES)


def check_job(job: str) -> str:
    if not job:
        raise InvalidRequest("job", "must not be empty")
    if not JOB_NAME.fullmatch(job):
        raise InvalidRequest("job", f"{job!r} is not a job name (letters, digits, '.', '_', '-'; at most 200; no ':')")
    if job in RESERVED_JOB_NAMES:
        raise InvalidRequest("job", f"{job!r} is reserved")
    return job


def check_batch(batch: int) -> int:
    if batch < 0:
        raise InvalidRequest("batch", f"must be >= 0, got {batch}")
    return batch


def check_epoch(epoch: int) -> int:
    if epoch <= 0:
        raise InvalidRequest("writer_epoch", f"must be > 0 (as returned by RegisterWriter), got {epoch}")
    return epoch


#: Bindings one participant of a job may carry (its outputs times its tables and topics).
MAX_BINDINGS = 64


def check_files(files: Sequence[StagedFile]) -> tuple[StagedFile, ...]:
    """The files with their SHA-256 in lowercase; every file needs a URI, a count >= 0 and a 64-hex digest."""
    if len(files) > MAX_STAGED_FILES:
        raise InvalidRequest("files", f"{len(files)} staged files, more than the limit of {MAX_STAGED_FILES}")
    checked: list[StagedFile] = []
    seen: set[str] = set()
    total = 0
    for index, file in enumerate(files):
        where = f"files[{index}]"
        if not file.uri:
            raise InvalidRequest(f"{where}.uri", "must not be empty")
        total += len(_check_size(f"{where}.uri", file.uri, MAX_URI_BYTES).encode())
        if total > MAX_TOTAL_URI_BYTES:
            raise InvalidRequest("files", f"the URIs add up to more than the limit of {MAX_TOTAL_URI_BYTES} bytes")
        if file.uri in seen:
            raise InvalidRequest(f"{where}.uri", f"{file.uri!r} is listed twice")
        seen.add(file.uri)
        if file.count < 0:
            raise InvalidRequest(f"{where}.count", f"must be >= 0, got {file.count} ({file.uri})")
        if not _HEX64.fullmatch(file.sha256):
            raise InvalidRequest(f"{where}.sha256", f"must be 64 hex characters, got {file.sha256!r} ({file.uri})")
        checked.append(StagedFile(file.uri, file.count, file.sha256.lower(), file.output))
    return tuple(checked)


def check_participants(participants: Sequence[ParticipantRef]) -> tuple[ParticipantRef, ...]:
    if not participants:
        raise InvalidRequest("participants", "a job needs at least one participant")
    if len(participants) > MAX_PARTICIPANTS:
        raise InvalidRequest(
            "participants", f"{len(participants)} participants, more than the limit of {MAX_PARTICIPANTS}"
        )
    names: set[str] = set()
    for index, ref in enumerate(participants):
        if not ref.sink:
            raise InvalidRequest(f"participants[{index}].sink", "must not be empty")
        _check_size(f"participants[{index}].sink", ref.sink, MAX_ID_BYTES)
        if SHARD_SEPARATOR in ref.sink:
            raise InvalidRequest(
                f"participants[{index}].sink", f"{ref.sink!r} contains {SHARD_SEPARATOR!r}, which names shards"
            )
        _check_size(f"participants[{index}].target", ref.target, MAX_ID_BYTES)
        if not ref.target:
            raise InvalidRequest(f"participants[{index}].target", f"must not be empty (sink {ref.sink!r})")
        if ref.name in names:
            what = f"{ref.shard} of sink {ref.sink!r}" if ref.shard.is_sharded else f"sink {ref.sink!r}"
            raise InvalidRequest(f"participants[{index}].sink", f"{what} is listed twice")
        names.add(ref.name)
        if len(ref.bindings) > MAX_BINDINGS:
            raise InvalidRequest(
                f"participants[{index}].bindings",
                f"{len(ref.bindings)} bindings, more than the limit of {MAX_BINDINGS}",
            )
        for j, binding in enumerate(ref.bindings):
            if binding.sink != ref.sink:
                raise InvalidRequest(
                    f"participants[{index}].bindings[{j}].sink",
                    f"is {binding.sink!r}, but the participant's sink is {ref.sink!r}",
                )
    check_shards(participants)
    return tuple(participants)


def check_shards(participants: Sequence[ParticipantRef]) -> None:
    """The shards of each sharded sink: every index of its count exactly once, each at a target of its
    own, all with the same bindings, which a sharded sink can split
    (:func:`~onceflow.contract.shards.check_shardable`)."""
    by_sink: dict[str, list[ParticipantRef]] = {}
    for ref in participants:
        by_sink.setdefault(ref.sink, []).append(ref)
    for sink, refs in by_sink.items():
        field = f"participants[sink={sink}]"
        counts = sorted({ref.shard.count for ref in refs})
        if len(counts) > 1:
            listed = " and ".join(map(str, counts))
            raise InvalidRequest(f"{field}.shard", f"sink {sink!r} is listed with {listed} shards")
        count = counts[0]
        if count == 1:
            continue
        missing = sorted(set(range(count)) - {ref.shard.index for ref in refs})
        if missing:
            absent = ", ".join(map(str, missing))
            raise InvalidRequest(f"{field}.shard", f"sink {sink!r} has {count} shards, but shard(s) {absent} missing")
        targets = [ref.target for ref in refs]
        shared = sorted({t for t in targets if targets.count(t) > 1})
        if shared:
            raise InvalidRequest(
                f"{field}.target",
                f"shards of sink {sink!r} share target {shared[0]}: each shard is a participant process of its own",
            )
        first = refs[0]
        for ref in refs[1:]:
            if ref.bindings != first.bindings:
                raise InvalidRequest(
                    f"{field}.bindings", f"{ref.shard} of sink {sink!r} has other bindings than {first.shard}"
                )
        try:
            check_shardable(sink, first.bindings)
        except InvalidBinding as exc:
            raise InvalidRequest(f"{field}.bindings", str(exc)) from None
