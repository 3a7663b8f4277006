"""Read a staged file back, verifying it is exactly what its writer reported."""

from __future__ import annotations

import hashlib

import pyarrow as pa

from onceflow.contract.staging.exceptions import (
    StagedFileChecksumMismatch,
    StagedFileCorrupt,
    StagedFileMissing,
    StagedFileTruncated,
    StagingError,
)
from onceflow.contract.staging.files import StagedFile
from onceflow.contract.staging.location import InvalidStagingUri, parse_staging_uri
from onceflow.contract.staging.store import StagingStore, default_store


def read_staged(file: StagedFile, *, store: StagingStore | None = None) -> pa.Table:
    """Every row of ``file``, in file order, with the schema the file carries.

    Steps:
        1. Parse the URI with the one staging parser (what the participant's confinement check
           parsed) and read the bytes; a file that does not exist raises :class:`StagedFileMissing`.
        2. Check the SHA-256 against ``file.sha256`` (:class:`StagedFileChecksumMismatch`).
        3. Open the Arrow IPC file (:class:`StagedFileCorrupt`) and check the row count against
           ``file.count`` (:class:`StagedFileTruncated` when rows are missing).

    Every error names ``file.uri``.
    """
    # Step 1
    try:
        location = parse_staging_uri(file.uri)
    except InvalidStagingUri as exc:
        raise StagingError(file.uri, f"cannot read staged file: {exc}") from None
    try:
        data = (store or default_store()).read(location)
    except StagedFileMissing:
        raise StagedFileMissing(file.uri) from None
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
