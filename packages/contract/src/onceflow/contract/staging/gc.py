"""Garbage-collect a micro-batch's staged files once its transaction has ended."""

from __future__ import annotations

from onceflow.contract.staging.files import batch_location
from onceflow.contract.staging.location import parse_staging_uri
from onceflow.contract.staging.store import StagingStore, default_store


def delete_batch(staging_root: str, job: str, batch: int, *, store: StagingStore | None = None) -> bool:
    """Delete ``<staging_root>/<job>/<batch>/`` and everything in it, never through a symlink.

    Idempotent: returns False when the directory was already gone, True when it deleted it. A
    symlink where the job's or the batch's directory should be is a
    :class:`~onceflow.contract.staging.store.SymlinkRefused`, and nothing is deleted.
    """
    store = store or default_store()
    return store.delete_tree(batch_location(staging_root, job, batch), parse_staging_uri(staging_root))
