"""The identity of a staged file and where a batch's files live."""

from __future__ import annotations

import os
from dataclasses import dataclass

from fsspec.utils import infer_storage_options  # type: ignore[import-untyped]

from onceflow.core.contract.bindings import DEFAULT_OUTPUT


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
    """``staging_root`` as a URI: local paths become absolute ``file://`` URIs, others pass through."""
    if infer_storage_options(staging_root)["protocol"] == "file" and not staging_root.startswith("file://"):
        return "file://" + os.path.abspath(staging_root)
    return staging_root.rstrip("/")


def batch_uri(staging_root: str, job: str, batch: int) -> str:
    """The directory holding every staged file of ``job``'s micro-batch ``batch``: ``<root>/<job>/<batch>``."""
    if not job or "/" in job or job in (".", ".."):
        raise ValueError(f"job name {job!r} cannot be a staging directory name")
    if batch < 0:
        raise ValueError(f"batch must be >= 0, got {batch}")
    return f"{root_uri(staging_root)}/{job}/{batch}"
