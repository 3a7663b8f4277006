"""The S3 API store of ``s3://`` staging URIs: its connection (settings, then the standard AWS variables)
and what its failures mean, in words that never carry a credential."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from pyarrow import fs as pafs

from onceflow.contract.staging.settings import S3Settings

#: The region an S3-compatible endpoint gets when none is configured (the AWS SDK's default).
DEFAULT_REGION: Final = "us-east-1"
#: ``AWS Error <CODE>`` in the messages of pyarrow's S3 filesystem.
_AWS_ERROR = re.compile(r"AWS Error ([A-Z_]+)")
_CREDENTIAL_ERRORS: Final = frozenset(
    {"ACCESS_DENIED", "SIGNATURE_DOES_NOT_MATCH", "INVALID_ACCESS_KEY_ID", "INVALID_SIGNATURE", "EXPIRED_TOKEN"}
)
_REDACTED: Final = "[redacted]"
#: The AWS SDKs' checksum switches: stores without the newer default checksums (S3Proxy 2.6, older
#: MinIO and Ceph) need both at ``when_required`` in every process that talks to them.
CHECKSUM_SWITCHES: Final = ("AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION")


def _first(environ: Mapping[str, str], *names: str) -> str:
    return next((environ[name] for name in names if environ.get(name)), "")


@dataclass(frozen=True)
class S3Connection:
    """Where the store is and how to sign requests, resolved once from settings and the environment.

    ``str()`` and ``repr()`` name the endpoint, the region and where the credentials came from, never
    the credentials themselves.
    """

    endpoint_url: str
    region: str
    access_key_id: str = field(repr=False)
    secret_access_key: str = field(repr=False)
    session_token: str = field(repr=False)
    credentials_from: str
    connect_timeout_s: float = 3.0
    max_attempts: int = 3
    #: The :data:`CHECKSUM_SWITCHES` set in the environment it was resolved from, as (name, value).
    checksum_switches: tuple[tuple[str, str], ...] = ()

    @classmethod
    def resolve(cls, settings: S3Settings | None, environ: Mapping[str, str]) -> S3Connection:
        """Every field from ``settings`` when set there, else from the standard AWS variable (see
        :class:`~onceflow.contract.staging.settings.S3Settings`)."""
        settings = settings or S3Settings()
        key_id = settings.access_key_id.get_secret_value()
        secret = settings.secret_access_key.get_secret_value()
        if key_id or secret:
            token, source = settings.session_token.get_secret_value(), "settings"
            if not (key_id and secret):
                source = "settings (incomplete: access_key_id and secret_access_key go together)"
        else:
            key_id = _first(environ, "AWS_ACCESS_KEY_ID")
            secret = _first(environ, "AWS_SECRET_ACCESS_KEY")
            token = _first(environ, "AWS_SESSION_TOKEN")
            source = "environment" if key_id or secret else "the AWS SDK's default chain"
        return cls(
            endpoint_url=settings.endpoint_url or _first(environ, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
            region=settings.region or _first(environ, "AWS_REGION", "AWS_DEFAULT_REGION"),
            access_key_id=key_id,
            secret_access_key=secret,
            session_token=token,
            credentials_from=source,
            connect_timeout_s=settings.connect_timeout_s,
            max_attempts=settings.max_attempts,
            checksum_switches=tuple((name, environ[name]) for name in CHECKSUM_SWITCHES if environ.get(name)),
        )

    def __str__(self) -> str:
        region = self.region or "default"
        return f"endpoint {self.endpoint_url or 'AWS'} (region {region}, credentials from {self.credentials_from})"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values that must never be shown: the key id, the secret and the session token."""
        return tuple(value for value in (self.access_key_id, self.secret_access_key, self.session_token) if value)

    def redact(self, text: str) -> str:
        """``text`` with every credential value replaced."""
        for value in self.secrets:
            text = text.replace(value, _REDACTED)
        return text

    def filesystem(self) -> pafs.S3FileSystem:
        """pyarrow's S3 filesystem for this connection (path-style addressing on a custom endpoint)."""
        options: dict[str, object] = {
            "connect_timeout": self.connect_timeout_s,
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=self.max_attempts),
        }
        if self.access_key_id or self.secret_access_key:
            options.update(access_key=self.access_key_id, secret_key=self.secret_access_key)
            if self.session_token:
                options["session_token"] = self.session_token
        if self.endpoint_url:
            endpoint = urlsplit(self.endpoint_url)
            options.update(endpoint_override=endpoint.netloc or endpoint.path, scheme=endpoint.scheme or "https")
            options["region"] = self.region or DEFAULT_REGION
        elif self.region:
            options["region"] = self.region
        return pafs.S3FileSystem(**options)

    def environment(self) -> dict[str, str]:
        """The standard AWS variables that give a child process (a Spark JVM and its Python workers, an
        executor on another host) this same connection, with the checksum switches it was given."""
        pairs = {
            **dict(self.checksum_switches),
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_SESSION_TOKEN": self.session_token,
        }
        return {name: value for name, value in pairs.items() if value}

    def explain(self, exc: BaseException, bucket: str) -> str:
        """What ``exc`` (an error of pyarrow's S3 filesystem) means for ``bucket``, on one line,
        without any credential."""
        message = " ".join(str(exc).split())
        match = _AWS_ERROR.search(message)
        code = match.group(1) if match else ""
        if code == "NO_SUCH_BUCKET":
            cause = f"bucket {bucket!r} does not exist at {self.endpoint_url or 'AWS'}"
        elif code in _CREDENTIAL_ERRORS or (match and "Forbidden" in message):
            cause = f"the store refused the credentials (from {self.credentials_from}) for bucket {bucket!r} ({code})"
        elif code == "NETWORK_CONNECTION" or "curlCode" in message:
            detail = message.split("Details:", 1)[-1].strip() if "Details:" in message else message
            cause = f"endpoint {self.endpoint_url or 'AWS'} is unreachable ({detail})"
        else:
            cause = message
        return self.redact(cause)
