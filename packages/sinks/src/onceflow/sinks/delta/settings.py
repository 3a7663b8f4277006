"""Settings of a Delta Lake sink (``kind = "delta"``)."""

from __future__ import annotations

from pydantic import Field, field_validator

from onceflow.core.settings import Section
from onceflow.core.staging.settings import S3Settings
from onceflow.sinks.lakehouse.settings import CommitRetrySettings, check_table_root


class DeltaOptions(Section):
    """``root`` holds one Delta table per binding (``<root>/<table>``): a local directory or
    ``s3://bucket/prefix``; ``state_dir`` holds the journal of prepared batches (local disk)."""

    root: str = Field(min_length=1)
    state_dir: str = Field(min_length=1)
    #: The S3 API store of an ``s3://`` root (as ``[staging.s3]``: empty fields from the AWS variables).
    s3: S3Settings = S3Settings()
    commit_retry: CommitRetrySettings = CommitRetrySettings()

    @field_validator("root")
    @classmethod
    def _table_root(cls, value: str) -> str:
        return check_table_root(value)
