"""Read a staged file back, verifying it is exactly what its writer reported."""

from __future__ import annotations

import hashlib

import pyarrow as pa
from fsspec.core import url_to_fs  # type: ignore[import-untyped]

from onceflow.core.staging.exceptions import (
    StagedFileChecksumMismatch,
    StagedFileCorrupt,
    StagedFileMissing,
    StagedFileTruncated,
    StagingError,
)
from onceflow.core.staging.files import StagedFile


def read_staged(file: StagedFile) -> pa.Table:
    """Every row of ``file``, in file order, with the schema the file carries.

    Steps:
        1. Read the bytes; a file that does not exist raises :class:`StagedFileMissing`.
        2. Check the SHA-256 against ``file.sha256`` (:class:`StagedFileChecksumMismatch`).
        3. Open the Arrow IPC file (:class:`StagedFileCorrupt`) and check the row count against
           ``file.count`` (:class:`StagedFileTruncated` when rows are missing).

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
        table = pa.ipc.open_file(pa.py_buffer(data)).read_all()
    except (pa.ArrowInvalid, OSError, ValueError) as exc:
        raise StagedFileCorrupt(
            file.uri, f"staged file {file.uri} is not an Arrow IPC file: {type(exc).__name__}: {exc}"
        ) from exc
    if table.num_rows < file.count:
        raise StagedFileTruncated(file.uri, file.count, table.num_rows)
    if table.num_rows > file.count:
        raise StagedFileCorrupt(file.uri, f"staged file {file.uri} holds {table.num_rows} rows, expected {file.count}")
    return table
