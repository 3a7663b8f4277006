"""The identity of a staged file and where a batch's files live."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.contract.bindings import DEFAULT_OUTPUT
from onceflow.contract.staging.location import StagingLocation, parse_staging_uri


@dataclass(frozen=True)
class StagedFile:
    """One staged file: its URI, its row count, the lowercase hex SHA-256 of its bytes, and the job
    output its rows belong to. The file itself is an Arrow IPC file that carries its schema.

    Mirrors the ``onceflow.v1.StagedFile`` message; the proto conversion lives with the gRPC code.
    """

    uri: str
    count: int
    sha256: str
    output: str = DEFAULT_OUTPUT


def root_uri(staging_root: str) -> str:
    """``staging_root`` as a canonical URI: local paths become absolute ``file://`` URIs."""
    return parse_staging_uri(staging_root).uri


def batch_location(staging_root: str, job: str, batch: int) -> StagingLocation:
    """Where every staged file of ``job``'s micro-batch ``batch`` lives: ``<root>/<job>/<batch>``."""
    if not job or "/" in job or job in (".", ".."):
        raise ValueError(f"job name {job!r} cannot be a staging directory name")
    if batch < 0:
        raise ValueError(f"batch must be >= 0, got {batch}")
    return parse_staging_uri(staging_root).child(job, str(batch))


def batch_uri(staging_root: str, job: str, batch: int) -> str:
    """The URI of :func:`batch_location`."""
    return batch_location(staging_root, job, batch).uri
