"""The one parser of staging URIs: what a URI names, for the confinement check and for the open alike.

A staging URI is one of:

- a local path (``/srv/staging/job/0/part-0.arrow``; a relative path is made absolute against the
  working directory) or a ``file:`` URI without a host or with host ``localhost``
  (``file:///srv/...``, ``file://localhost/srv/...``): both name the absolute local path;
- ``s3://bucket/key`` (``s3a://`` is the same, as Hadoop spells it): an object in a bucket of the
  S3 API store that the settings or the standard AWS environment variables point at.

Everything else is refused before anything is opened, as :class:`InvalidStagingUri` naming the URI:
fsspec-style chained URLs (``x::http://...``), a NUL character, a query or a fragment, a ``file:``
URI naming another host or a relative path, an ``s3`` URI without a bucket or with credentials or a
port in its authority, and any other scheme. The participant checks a staged file's
:class:`StagingLocation` against its roots and then opens that same location, so the check is made
on exactly what is opened.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import unquote, urlsplit

from onceflow.core.errors import OnceflowError, shown

#: The scheme of local files; a URI without a scheme is a local path.
FILE_SCHEME: Final = "file"
#: The scheme of objects in an S3 API store.
S3_SCHEME: Final = "s3"
#: The schemes a staging root or a staged file may have, and what each one means.
SCHEMES: Final = {FILE_SCHEME: FILE_SCHEME, S3_SCHEME: S3_SCHEME, "s3a": S3_SCHEME}
#: Bucket names as S3 allows them (3-63 lowercase letters, digits, dots and hyphens).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")

Store = Literal["file", "s3"]


class InvalidStagingUri(OnceflowError, ValueError):  # noqa: N818 - reads as a verdict
    """A string that is not a staging URI (see the module docstring); names it and what is wrong."""

    def __init__(self, uri: str, reason: str) -> None:
        self.uri = uri
        self.reason = reason
        super().__init__(f"{shown(uri)!r} is not a staging URI: {reason}")


@dataclass(frozen=True)
class StagingLocation:
    """Where a staging URI points: a local absolute path, or a key in an S3 bucket.

    ``path`` is the absolute local path (``store == "file"``) or the object key without a leading
    slash (``store == "s3"``, possibly empty for the bucket's top). :attr:`uri` is the canonical
    spelling (``file:///...`` or ``s3://bucket/key``).
    """

    store: Store
    path: str
    bucket: str = ""

    @property
    def uri(self) -> str:
        if self.store == FILE_SCHEME:
            return f"file://{self.path}"
        return f"s3://{self.bucket}/{self.path}" if self.path else f"s3://{self.bucket}"

    def child(self, *names: str) -> StagingLocation:
        """The location of ``names`` (plain names, joined with ``/``) under this one."""
        for name in names:
            if not name or "/" in name or name in (".", "..") or "\x00" in name:
                raise InvalidStagingUri(f"{self.uri}/{name}", f"{name!r} is not a plain name")
        joined = "/".join((self.path.rstrip("/"), *names)) if self.path else "/".join(names)
        return StagingLocation(self.store, joined, self.bucket)

    def within(self, root: StagingLocation) -> bool:
        """True if this location is ``root`` or lies under it (same store and bucket, by path segments)."""
        if self.store != root.store or self.bucket != root.bucket:
            return False
        top = root.path.rstrip("/")
        if self.store == S3_SCHEME and not top:
            return True
        return self.path == top or self.path.startswith(top + "/")


def _dot_segments(path: str, names: tuple[str, ...] = ("..",)) -> bool:
    """True if ``path``, as written or percent-decoded, has a segment among ``names``."""
    return any(segment in names for candidate in (path, unquote(path)) for segment in candidate.split("/"))


def parse_staging_uri(uri: str) -> StagingLocation:
    """The :class:`StagingLocation` that ``uri`` names; :class:`InvalidStagingUri` if it is not one.

    Nothing is opened, and symlinks are not resolved (the confinement check resolves local ones).
    """
    if not uri:
        raise InvalidStagingUri(uri, "it is empty")
    if "\x00" in uri:
        raise InvalidStagingUri(uri, "it contains a NUL character")
    if "::" in uri:
        raise InvalidStagingUri(uri, "a chained URL ('::') is not a staging URI")
    if "?" in uri or "#" in uri:
        raise InvalidStagingUri(uri, "a staging URI has no query or fragment")
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not scheme:
        if _dot_segments(uri):
            raise InvalidStagingUri(uri, "it contains a '..' segment")
        return StagingLocation(FILE_SCHEME, posixpath.normpath(os.path.abspath(uri)))
    store = SCHEMES.get(scheme)
    if store is None:
        raise InvalidStagingUri(uri, f"scheme {scheme!r} is not one of {', '.join(sorted(SCHEMES))}")
    if store == FILE_SCHEME:
        if parts.netloc not in ("", "localhost"):
            raise InvalidStagingUri(uri, f"a file URI names host {parts.netloc!r}; only local files are staged")
        if not parts.path.startswith("/"):
            raise InvalidStagingUri(uri, "a file URI needs an absolute path")
        if _dot_segments(parts.path):
            raise InvalidStagingUri(uri, "it contains a '..' segment")
        return StagingLocation(FILE_SCHEME, posixpath.normpath(parts.path))
    bucket = parts.netloc
    if not _BUCKET.match(bucket):
        raise InvalidStagingUri(uri, f"{bucket!r} is not an S3 bucket name (no credentials or port go in the URI)")
    key = parts.path.lstrip("/")
    if _dot_segments(key, (".", "..")) or "//" in key:
        raise InvalidStagingUri(uri, "an object key of a staging URI has no empty, '.' or '..' segments")
    return StagingLocation(S3_SCHEME, key.rstrip("/"), bucket)
