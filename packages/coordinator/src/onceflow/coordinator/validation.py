"""Argument checks of the coordinator's operations; a bad argument is an :class:`InvalidRequest` naming it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from onceflow.coordinator.exceptions import InvalidRequest
from onceflow.coordinator.model import JOB_NAME, RESERVED_JOB_NAMES, ParticipantRef, StagedFile

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


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


def check_files(files: Sequence[StagedFile]) -> tuple[StagedFile, ...]:
    """The files with their SHA-256 in lowercase; every file needs a URI, a count >= 0 and a 64-hex digest."""
    checked: list[StagedFile] = []
    seen: set[str] = set()
    for index, file in enumerate(files):
        where = f"files[{index}]"
        if not file.uri:
            raise InvalidRequest(f"{where}.uri", "must not be empty")
        if file.uri in seen:
            raise InvalidRequest(f"{where}.uri", f"{file.uri!r} is listed twice")
        seen.add(file.uri)
        if file.count < 0:
            raise InvalidRequest(f"{where}.count", f"must be >= 0, got {file.count} ({file.uri})")
        if not _HEX64.fullmatch(file.sha256):
            raise InvalidRequest(f"{where}.sha256", f"must be 64 hex characters, got {file.sha256!r} ({file.uri})")
        checked.append(StagedFile(file.uri, file.count, file.sha256.lower()))
    return tuple(checked)


def check_participants(participants: Sequence[ParticipantRef]) -> tuple[ParticipantRef, ...]:
    if not participants:
        raise InvalidRequest("participants", "a job needs at least one participant")
    sinks: set[str] = set()
    for index, ref in enumerate(participants):
        if not ref.sink:
            raise InvalidRequest(f"participants[{index}].sink", "must not be empty")
        if not ref.target:
            raise InvalidRequest(f"participants[{index}].target", f"must not be empty (sink {ref.sink!r})")
        if ref.sink in sinks:
            raise InvalidRequest(f"participants[{index}].sink", f"sink {ref.sink!r} is listed twice")
        sinks.add(ref.sink)
    return tuple(participants)
