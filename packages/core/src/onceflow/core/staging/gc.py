"""Garbage-collect a micro-batch's staged files once its transaction has ended."""

from __future__ import annotations

from fsspec.core import url_to_fs  # type: ignore[import-untyped]

from onceflow.core.staging.exceptions import StagingError
from onceflow.core.staging.files import batch_uri


def delete_batch(staging_root: str, job: str, batch: int) -> bool:
    """Delete ``<staging_root>/<job>/<batch>/`` and everything in it.

    Idempotent: returns False when the directory was already gone, True when it deleted it.
    """
    uri = batch_uri(staging_root, job, batch)
    fs, path = url_to_fs(uri)
    try:
        if not fs.exists(path):
            return False
        fs.rm(path, recursive=True)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StagingError(uri, f"cannot delete staged batch {uri}: {exc}") from exc
    return True
