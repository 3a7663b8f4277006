"""Settings every lakehouse sink shares: the object store its tables live on, and commit retries."""

from __future__ import annotations

from typing import Final

from pydantic import Field, field_validator

from onceflow.core.settings import Section

#: Where a table root may live: a local directory (a path or ``file://``) or an S3 bucket.
TABLE_SCHEMES: Final = ("file", "s3")


class ObjectStoreSettings(Section):
    """How to reach an S3-compatible object store (AWS S3, MinIO, S3Proxy); unused for local roots.

    Empty credentials fall back to the standard ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``
    environment, so secrets need not be written in a config file.
    """

    #: ``http://host:port`` of an S3-compatible endpoint; empty = AWS S3 itself.
    endpoint_url: str = ""
    region: str = "us-east-1"
    access_key_id: str = ""
    secret_access_key: str = ""
    #: Seconds before a request to the store gives up (a dead store makes a prepare vote no, a commit retry).
    request_timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("endpoint_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"endpoint_url {value!r} must start with http:// or https://")
        return value.rstrip("/")


class CommitRetrySettings(Section):
    """How a table commit that lost a race with another writer is retried before the Commit RPC fails
    (the coordinator then re-sends it: a conflict is retried, never lost)."""

    attempts: int = Field(default=8, ge=1, le=100)
    initial_backoff_ms: int = Field(default=50, gt=0)
    max_backoff_ms: int = Field(default=2_000, gt=0)


def check_table_root(value: str) -> str:
    """A table root's URI scheme must be one of :data:`TABLE_SCHEMES`."""
    scheme = value.split("://", 1)[0].lower() if "://" in value else "file"
    if scheme not in TABLE_SCHEMES:
        raise ValueError(f"{value!r} has scheme {scheme!r}; tables live on {', '.join(TABLE_SCHEMES)}")
    if scheme == "s3" and not value[len("s3://") :].split("/", 1)[0]:
        raise ValueError(f"{value!r} names no bucket (s3://bucket/prefix)")
    return value.rstrip("/") if value != "/" else value
