"""Find and describe staged files whose descriptors the committing driver did not get back from tasks:
side outputs (found by name) and derived outputs (listed in a manifest)."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa

from onceflow.contract.staging.exceptions import StagedFileCorrupt, StagedFileMissing, StagingError
from onceflow.contract.staging.files import StagedFile, batch_location
from onceflow.contract.staging.location import InvalidStagingUri, parse_staging_uri
from onceflow.contract.staging.store import StagingStore, default_store
from onceflow.contract.staging.writer import MANIFEST_SUFFIX, SUFFIX


def list_staged(
    staging_root: str, job: str, batch: int, *, prefix: str = "", store: StagingStore | None = None
) -> list[tuple[str, str]]:
    """``(name, uri)`` of every complete staged file of ``<job>:<batch>`` whose name starts with ``prefix``,
    sorted by name. Temporary files of writes in progress are hidden (they start with ``.``)."""
    directory = batch_location(staging_root, job, batch)
    found = []
    for name in (store or default_store()).list_names(directory):
        if name.startswith(prefix) and name.endswith(SUFFIX) and not name.startswith("."):
            found.append((name.removesuffix(SUFFIX), directory.child(name).uri))
    return sorted(found)


def describe_staged(uri: str, output: str, *, store: StagingStore | None = None) -> StagedFile:
    """The :class:`StagedFile` of an existing staged file: its row count (from the Arrow footer) and sha256."""
    try:
        location = parse_staging_uri(uri)
    except InvalidStagingUri as exc:
        raise StagingError(uri, f"cannot read staged file: {exc}") from None
    data = (store or default_store()).read(location)
    try:
        reader = pa.ipc.open_file(pa.py_buffer(data))
        count = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    except (pa.ArrowInvalid, OSError) as exc:
        raise StagedFileCorrupt(uri, f"staged file {uri} is not an Arrow IPC file: {exc}") from exc
    return StagedFile(uri=uri, count=count, sha256=hashlib.sha256(data).hexdigest(), output=output)


def read_manifest(
    staging_root: str, job: str, batch: int, name: str, *, store: StagingStore | None = None
) -> list[StagedFile] | None:
    """The files listed in manifest ``name`` of ``<job>:<batch>`` (see ``StagingWriter.write_manifest``),
    or None when there is no such manifest."""
    location = batch_location(staging_root, job, batch).child(f"{name}{MANIFEST_SUFFIX}")
    try:
        data = (store or default_store()).read(location)
    except StagedFileMissing:
        return None
    try:
        return [StagedFile(**entry) for entry in json.loads(data)["files"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise StagedFileCorrupt(location.uri, f"manifest {location.uri} is not a list of staged files: {exc}") from exc
