"""Read a staged file back, verifying it is exactly what its writer reported."""

from __future__ import annotations

import datetime as dt
import hashlib
import io

import fastavro
from fsspec.core import url_to_fs  # type: ignore[import-untyped]

from onceflow.core.avro import IpCount
from onceflow.core.staging.exceptions import (
    StagedFileChecksumMismatch,
    StagedFileCorrupt,
    StagedFileMissing,
    StagedFileTruncated,
    StagingError,
)
from onceflow.core.staging.files import StagedFile

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_MS = dt.timedelta(milliseconds=1)


def read_staged(file: StagedFile) -> list[IpCount]:
    """Every row of ``file``, in file order.

    Steps:
        1. Read the bytes; a file that does not exist raises :class:`StagedFileMissing`.
        2. Check the SHA-256 against ``file.sha256`` (:class:`StagedFileChecksumMismatch`).
        3. Decode the Avro container file (:class:`StagedFileCorrupt`) and check the row count
           against ``file.count`` (:class:`StagedFileTruncated` when rows are missing).

    Every error names ``file.uri``.
    """
    # Step 1
    try:
        fs, path = url_to_fs(file.uri)
        data = fs.cat_file(path)
    except FileNotFoundError:
        raise StagedFileMissing(file.uri) from None
    except (OSError, ValueError) as exc:
        raise StagingError(file.uri, f"cannot read staged file {file.uri}: {exc}") from exc
    # Step 2
    actual = hashlib.sha256(data).hexdigest()
    if actual != file.sha256.lower():
        raise StagedFileChecksumMismatch(file.uri, file.sha256, actual)
    # Step 3
    try:
        rows = [_to_ip_count(record) for record in fastavro.reader(io.BytesIO(data))]
    except Exception as exc:  # fastavro raises EOFError, ValueError, SchemaResolutionError, ...
        raise StagedFileCorrupt(
            file.uri, f"staged file {file.uri} is not an Avro file of IpCount rows: {type(exc).__name__}: {exc}"
        ) from exc
    if len(rows) < file.count:
        raise StagedFileTruncated(file.uri, file.count, len(rows))
    if len(rows) > file.count:
        raise StagedFileCorrupt(file.uri, f"staged file {file.uri} holds {len(rows)} rows, expected {file.count}")
    return rows


def _millis(value: object) -> int:
    """Window bounds come back as datetimes (timestamp-millis logical type); rows carry epoch ms."""
    if isinstance(value, dt.datetime):
        return (value - _EPOCH) // _ONE_MS
    if isinstance(value, int):
        return value
    raise TypeError(f"expected a timestamp, got {type(value).__name__}")


def _to_ip_count(record: object) -> IpCount:
    if not isinstance(record, dict):
        raise TypeError(f"expected a record, got {type(record).__name__}")
    return IpCount(
        window_start=_millis(record["window_start"]),
        window_end=_millis(record["window_end"]),
        ip=str(record["ip"]),
        count=int(record["count"]),
    )
