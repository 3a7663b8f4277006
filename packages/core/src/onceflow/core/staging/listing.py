"""Find and describe staged files whose descriptors the committing driver did not get back from tasks:
side outputs (found by name) and derived outputs (listed in a manifest)."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
from fsspec.core import url_to_fs  # type: ignore[import-untyped]

from onceflow.core.staging.exceptions import StagedFileCorrupt, StagedFileMissing, StagingError
from onceflow.core.staging.files import StagedFile, batch_uri
from onceflow.core.staging.writer import MANIFEST_SUFFIX, SUFFIX


def list_staged(staging_root: str, job: str, batch: int, *, prefix: str = "") -> list[tuple[str, str]]:
    """``(name, uri)`` of every complete staged file of ``<job>:<batch>`` whose name starts with ``prefix``,
    sorted by name. Temporary files of writes in progress are hidden (they start with ``.``)."""
    directory = batch_uri(staging_root, job, batch)
    fs, path = url_to_fs(directory)
    try:
        entries = fs.ls(path, detail=False)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StagingError(directory, f"cannot list staged batch {directory}: {exc}") from exc
    found = []
    for entry in entries:
        name = str(entry).rstrip("/").rsplit("/", 1)[-1]
        if name.startswith(prefix) and name.endswith(SUFFIX) and not name.startswith("."):
            found.append((name.removesuffix(SUFFIX), f"{directory}/{name}"))
    return sorted(found)


def describe_staged(uri: str, output: str) -> StagedFile:
    """The :class:`StagedFile` of an existing staged file: its row count (from the Arrow footer) and sha256."""
    try:
        fs, path = url_to_fs(uri)
        data = fs.cat_file(path)
    except FileNotFoundError:
        raise StagedFileMissing(uri) from None
    except OSError as exc:
        raise StagingError(uri, f"cannot read staged file {uri}: {exc}") from exc
    try:
        reader = pa.ipc.open_file(pa.py_buffer(data))
        count = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    except (pa.ArrowInvalid, OSError) as exc:
        raise StagedFileCorrupt(uri, f"staged file {uri} is not an Arrow IPC file: {exc}") from exc
    return StagedFile(uri=uri, count=count, sha256=hashlib.sha256(data).hexdigest(), output=output)


def read_manifest(staging_root: str, job: str, batch: int, name: str) -> list[StagedFile] | None:
    """The files listed in manifest ``name`` of ``<job>:<batch>`` (see ``StagingWriter.write_manifest``),
    or None when there is no such manifest."""
    uri = f"{batch_uri(staging_root, job, batch)}/{name}{MANIFEST_SUFFIX}"
    try:
        fs, path = url_to_fs(uri)
        data = fs.cat_file(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StagingError(uri, f"cannot read manifest {uri}: {exc}") from exc
    try:
        return [StagedFile(**entry) for entry in json.loads(data)["files"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise StagedFileCorrupt(uri, f"manifest {uri} is not a list of staged files: {exc}") from exc
