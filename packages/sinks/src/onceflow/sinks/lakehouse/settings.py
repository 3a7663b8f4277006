"""Settings every lakehouse sink shares: where its tables may live, and commit retries (the S3 store of an
``s3://`` root is staging's :class:`~onceflow.contract.staging.settings.S3Settings`)."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from onceflow.contract.staging.settings import S3Settings
from onceflow.core.settings import Section

#: Where a table root may live: a local directory (a path or ``file://``) or an S3 bucket.
TABLE_SCHEMES: Final = ("file", "s3")


class CommitRetrySettings(Section):
    """How a table commit that lost a race with another writer is retried before the Commit RPC fails
    (the coordinator then re-sends it: a conflict is retried, never lost)."""

    attempts: int = Field(default=8, ge=1, le=100)
    initial_backoff_ms: int = Field(default=50, gt=0)
    max_backoff_ms: int = Field(default=2_000, gt=0)


class LakehouseOptions(Section):
    """What every lakehouse sink's options have besides its table root: ``state_dir`` holds the journal
    of prepared batches (local disk), ``s3`` the S3 API store of an ``s3://`` root, ``commit_retry``
    how a lost commit race is retried."""

    state_dir: str = Field(min_length=1)
    #: The S3 API store of an ``s3://`` root (as ``[staging.s3]``: empty fields from the AWS variables).
    s3: S3Settings = S3Settings()
    commit_retry: CommitRetrySettings = CommitRetrySettings()


def check_table_root(value: str) -> str:
    """A table root's URI scheme must be one of :data:`TABLE_SCHEMES`."""
    scheme = value.split("://", 1)[0].lower() if "://" in value else "file"
    if scheme not in TABLE_SCHEMES:
        raise ValueError(f"{value!r} has scheme {scheme!r}; tables live on {', '.join(TABLE_SCHEMES)}")
    if scheme == "s3" and not value[len("s3://") :].split("/", 1)[0]:
        raise ValueError(f"{value!r} names no bucket (s3://bucket/prefix)")
    return value.rstrip("/") if value != "/" else value
