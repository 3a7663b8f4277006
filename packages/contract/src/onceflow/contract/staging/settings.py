"""Settings of the store behind ``s3://`` staging URIs: the ``[staging.s3]`` section of every service that stages.

The Spark job, the coordinator and the participant each carry this section. An empty field falls back
to the standard AWS environment variable named in its comment, so a deploy may configure the store
either way; the secret fields are :class:`~pydantic.SecretStr` and never print.
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from onceflow.core.settings import Section


class S3Settings(Section):
    """How to reach the S3 API store (AWS S3 or any S3-compatible store).

    Empty fields fall back to the environment: ``endpoint_url`` to ``AWS_ENDPOINT_URL_S3`` then
    ``AWS_ENDPOINT_URL`` (empty everywhere: AWS itself), ``region`` to ``AWS_REGION`` then
    ``AWS_DEFAULT_REGION``, ``access_key_id``, ``secret_access_key`` and ``session_token`` to
    ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN`` (none anywhere: the AWS
    SDK's own chain, e.g. ``~/.aws/credentials`` or an instance role).
    """

    endpoint_url: str = ""
    region: str = ""
    access_key_id: SecretStr = SecretStr("")
    secret_access_key: SecretStr = SecretStr("")
    session_token: SecretStr = SecretStr("")
    #: Deadline of one connection attempt to the endpoint.
    connect_timeout_s: float = Field(default=3.0, gt=0)
    #: Attempts of one request (the AWS SDK's standard retry strategy) before it fails.
    max_attempts: int = Field(default=3, ge=1, le=20)


class StagingStoreSettings(Section):
    """The stores that staging URIs may name (``[staging]``): today the S3 API store of ``s3://`` URIs."""

    s3: S3Settings = S3Settings()
