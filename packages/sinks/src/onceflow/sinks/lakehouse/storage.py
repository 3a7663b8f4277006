"""Where a lakehouse sink's tables live: a local directory or an S3 prefix, and the files in it.

One :class:`TableStore` per sink. It turns a table name into the table's URI (the only tables a
sink writes are under its root), writes the data files a prepare makes durable before the yes
vote, deletes the files of an aborted transaction (only inside the root, never through a symlink),
and hands each table format's library the same credentials: delta-rs ``storage_options``,
pyiceberg FileIO properties, a pyarrow filesystem.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from onceflow.contract.staging.confinement import PathNotAllowed, StagingConfinement
from onceflow.contract.staging.s3 import DEFAULT_REGION, S3Connection
from onceflow.contract.staging.settings import S3Settings
from onceflow.core.fsync import fsync_file_and_directory, fsync_path
from onceflow.sinks.lakehouse.exceptions import TableStoreUnavailable
from onceflow.sinks.lakehouse.settings import TABLE_SCHEMES

FILE: Final = "file"
S3: Final = "s3"


class TableStore:
    """The tables under ``root`` (a local path, ``file://`` or ``s3://bucket/prefix``) of one sink."""

    def __init__(self, root: str, s3: S3Settings | None = None, *, create: bool = True) -> None:
        """``create``: make a missing local root (the participant); readers leave the disk as it is.
        An ``s3://`` root's store is staging's :class:`S3Connection` (``s3``, then the AWS variables)."""
        self.s3 = S3Connection.resolve(s3, os.environ)
        parts = urlsplit(root)
        self.scheme = (parts.scheme or FILE).lower()
        if self.scheme == FILE:
            local = Path(parts.path if parts.scheme else root).expanduser().resolve()
            if create:
                local.mkdir(parents=True, exist_ok=True)
            self.root = str(local)
            self._fs: pafs.FileSystem = pafs.LocalFileSystem()
        else:
            self.root = f"{S3}://{parts.netloc}{parts.path.rstrip('/')}"
            self._fs = self._s3_filesystem()
        self._confinement = StagingConfinement([self.root], TABLE_SCHEMES, setting="root")

    @property
    def is_local(self) -> bool:
        return self.scheme == FILE

    def table_uri(self, table: str) -> str:
        """The URI of ``table`` (a name the binding contract already restricted to ``[A-Za-z0-9_]``)."""
        return f"{self.root}/{table}"

    def file_uri(self, table: str, name: str) -> str:
        return f"{self.table_uri(table)}/{name}"

    # --- files ----------------------------------------------------------------------------------

    def _path(self, uri: str) -> str:
        """The filesystem path of ``uri`` for :attr:`_fs` (bucket/key on S3, a local path otherwise)."""
        parts = urlsplit(uri)
        if self.is_local:
            return parts.path if parts.scheme else uri
        return f"{parts.netloc}{parts.path}"

    def write_parquet(self, uri: str, rows: pa.Table) -> int:
        """Write ``rows`` as a Parquet file at ``uri``, durably; returns its size in bytes.

        A local file is fsynced with its directory before this returns, so a yes vote that follows
        survives a crash of the machine; an S3 object is durable once its PUT succeeded.
        """
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink, compression="snappy")
        data = sink.getvalue().to_pybytes()
        path = self._path(uri)
        try:
            if self.is_local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                fsync_path(os.path.dirname(path))
            else:
                with self._fs.open_output_stream(path) as out:
                    out.write(data)
        except OSError as exc:
            raise TableStoreUnavailable(uri, self.redact(f"cannot write {uri}: {exc}")) from exc
        return len(data)

    def make_durable(self, uri: str) -> None:
        """fsync a local file another library wrote (and its directory); S3 objects already are."""
        if not self.is_local:
            return
        fsync_file_and_directory(self._path(uri))

    def read_parquet(self, uri: str) -> pa.Table:
        try:
            return pq.read_table(self._path(uri), filesystem=self._fs)
        except OSError as exc:
            raise TableStoreUnavailable(uri, self.redact(f"cannot read {uri}: {exc}")) from exc

    def size(self, uri: str) -> int:
        info = self._fs.get_file_info(self._path(uri))
        if info.type != pafs.FileType.File:
            raise TableStoreUnavailable(uri, f"{uri} is missing")
        return int(info.size)

    def delete(self, uri: str) -> bool:
        """Delete the file at ``uri`` if it lies inside the root (a missing file is fine); True if it existed.

        A local path is checked by real path, so a symlink pointing out of the root is refused.
        """
        try:
            self._confinement.check(uri)
        except PathNotAllowed as exc:
            raise TableStoreUnavailable(uri, f"refusing to delete {uri}: {exc.reason}") from None
        path = self._path(uri)
        try:
            if self.is_local:
                if os.path.islink(path):
                    raise TableStoreUnavailable(uri, f"refusing to delete {uri}: it is a symlink")
                os.unlink(path)
            else:
                if self._fs.get_file_info(path).type == pafs.FileType.NotFound:
                    return False
                self._fs.delete_file(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise TableStoreUnavailable(uri, self.redact(f"cannot delete {uri}: {exc}")) from exc
        return True

    def tables(self) -> list[str]:
        """The names of the directories directly under the root (candidate tables), sorted."""
        selector = pafs.FileSelector(self._path(self.root), allow_not_found=True)
        try:
            found = self._fs.get_file_info(selector)
        except OSError as exc:
            raise TableStoreUnavailable(self.root, f"cannot list {self.root}: {exc}") from exc
        return sorted(info.base_name for info in found if info.type == pafs.FileType.Directory)

    def filesystem(self) -> pafs.FileSystem:
        """A pyarrow filesystem for paths made by :meth:`path_of`."""
        return self._fs

    def path_of(self, uri: str) -> str:
        return self._path(uri)

    # --- what each library needs ----------------------------------------------------------------

    def _s3_filesystem(self) -> pafs.S3FileSystem:
        return self.s3.filesystem()

    def redact(self, text: str) -> str:
        """``text`` without the store's credentials (for errors and logs)."""
        return self.s3.redact(text)

    def delta_storage_options(self) -> dict[str, str]:
        """delta-rs ``storage_options`` (object_store's AWS keys) for the same connection; empty locally."""
        if self.is_local:
            return {}
        s3 = self.s3
        # object_store's client and retry settings: a dead store fails a call within a few timeouts
        # (the coordinator retries the Commit), instead of object_store's default 10 retries / 3 min.
        options = {
            "timeout": f"{3 * s3.connect_timeout_s}s",
            "connect_timeout": f"{s3.connect_timeout_s}s",
            "max_retries": str(s3.max_attempts - 1),
            "retry_timeout": f"{6 * s3.connect_timeout_s}s",
        }
        pairs = {
            "AWS_ENDPOINT_URL": s3.endpoint_url,
            "AWS_REGION": s3.region or (DEFAULT_REGION if s3.endpoint_url else ""),
            "AWS_ACCESS_KEY_ID": s3.access_key_id,
            "AWS_SECRET_ACCESS_KEY": s3.secret_access_key,
            "AWS_SESSION_TOKEN": s3.session_token,
        }
        options |= {name: value for name, value in pairs.items() if value}
        if s3.endpoint_url.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
        return options

    def iceberg_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties (pyarrow's S3 filesystem) for the same connection; empty locally."""
        if self.is_local:
            return {}
        s3 = self.s3
        properties = {
            "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
            "s3.region": s3.region or DEFAULT_REGION,
            "s3.connect-timeout": str(s3.connect_timeout_s),
            "s3.request-timeout": str(3 * s3.connect_timeout_s),
        }
        pairs = {
            "s3.endpoint": s3.endpoint_url,
            "s3.access-key-id": s3.access_key_id,
            "s3.secret-access-key": s3.secret_access_key,
            "s3.session-token": s3.session_token,
        }
        return properties | {name: value for name, value in pairs.items() if value}
