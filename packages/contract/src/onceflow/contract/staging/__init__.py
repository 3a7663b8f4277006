"""Staged micro-batch output: self-describing Arrow IPC files, one per Spark task attempt and output.

Spark tasks write them with :class:`StagingWriter`, sink participants read them back with
:func:`read_staged` (verifying existence, checksum and row count), and the coordinator deletes a
batch's files with :func:`delete_batch` once the transaction has ended. A staging root is a local
directory or ``s3://bucket/prefix`` on any S3 API store: :func:`parse_staging_uri` is the one parser
of staging URIs and :class:`StagingStore` the one way to storage (pyarrow's filesystems).
Services check their root at start with :func:`probe_staging_root`.
"""

from onceflow.contract.staging.exceptions import (
    StagedFileChecksumMismatch,
    StagedFileCorrupt,
    StagedFileMissing,
    StagedFileTruncated,
    StagingError,
)
from onceflow.contract.staging.files import StagedFile, batch_location, batch_uri
from onceflow.contract.staging.gc import delete_batch
from onceflow.contract.staging.listing import describe_staged, list_staged, read_manifest
from onceflow.contract.staging.location import InvalidStagingUri, StagingLocation, parse_staging_uri
from onceflow.contract.staging.probe import StagingRootUnusable, probe_staging_root
from onceflow.contract.staging.reader import read_staged
from onceflow.contract.staging.settings import S3Settings, StagingStoreSettings
from onceflow.contract.staging.store import StagingStore, SymlinkRefused, default_store, install_store
from onceflow.contract.staging.writer import StagingWriter

__all__ = [
    "InvalidStagingUri",
    "S3Settings",
    "StagedFile",
    "StagedFileChecksumMismatch",
    "StagedFileCorrupt",
    "StagedFileMissing",
    "StagedFileTruncated",
    "StagingError",
    "StagingLocation",
    "StagingRootUnusable",
    "StagingStore",
    "StagingStoreSettings",
    "StagingWriter",
    "SymlinkRefused",
    "batch_location",
    "batch_uri",
    "default_store",
    "delete_batch",
    "describe_staged",
    "install_store",
    "list_staged",
    "parse_staging_uri",
    "probe_staging_root",
    "read_manifest",
    "read_staged",
]
