"""Staged micro-batch output: self-describing Arrow IPC files, one per Spark task attempt and output.

Spark tasks write them with :class:`StagingWriter`, sink participants read them back with
:func:`read_staged` (verifying existence, checksum and row count), and the coordinator deletes a
batch's files with :func:`delete_batch` once the transaction has ended. Any fsspec filesystem
works: local paths and ``file://`` URIs out of the box, ``s3://``, ``hdfs://``, ... when the
matching fsspec backend is installed.
"""

from onceflow.core.staging.exceptions import (
    StagedFileChecksumMismatch,
    StagedFileCorrupt,
    StagedFileMissing,
    StagedFileTruncated,
    StagingError,
)
from onceflow.core.staging.files import StagedFile, batch_uri
from onceflow.core.staging.gc import delete_batch
from onceflow.core.staging.listing import describe_staged, list_staged, read_manifest
from onceflow.core.staging.reader import read_staged
from onceflow.core.staging.writer import StagingWriter

__all__ = [
    "StagedFile",
    "StagedFileChecksumMismatch",
    "StagedFileCorrupt",
    "StagedFileMissing",
    "StagedFileTruncated",
    "StagingError",
    "StagingWriter",
    "batch_uri",
    "delete_batch",
    "describe_staged",
    "list_staged",
    "read_manifest",
    "read_staged",
]
