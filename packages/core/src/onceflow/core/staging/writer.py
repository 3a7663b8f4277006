"""Write a Spark task attempt's output rows as one staged Avro file."""

from __future__ import annotations

import hashlib
import io
import os
import uuid
from collections.abc import Iterable
from typing import Any

import fastavro
from fsspec.core import url_to_fs  # type: ignore[import-untyped]
from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

from onceflow.core.avro import IP_COUNT_SCHEMA, IpCount
from onceflow.core.staging.exceptions import StagingError
from onceflow.core.staging.files import StagedFile, batch_uri

_PARSED_SCHEMA = fastavro.parse_schema(dict(IP_COUNT_SCHEMA))


class StagingWriter:
    """Writes the staged files of one micro-batch of one job under ``<staging_root>/<job>/<batch>/``.

    Each :meth:`write` publishes a complete file or nothing: readers never see a partial file
    under its final name. On a local filesystem the file and its directory are fsynced, so a
    reported file survives a crash of the machine, not only of the process.
    """

    def __init__(self, staging_root: str, job: str, batch: int) -> None:
        self.directory = batch_uri(staging_root, job, batch)
        self.job = job
        self.batch = batch

    def write(self, name: str, rows: Iterable[IpCount]) -> StagedFile:
        """Write ``rows`` to ``<name>.avro`` and return its :class:`StagedFile` (uri, count, sha256).

        Steps:
            1. Encode the rows as an Avro container file in memory and hash the bytes.
            2. Write the bytes to a temporary name in the batch directory and make them durable.
            3. Rename the temporary file to ``<name>.avro`` (replacing an earlier attempt's file).
        """
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"staged file name {name!r} must be a plain, non-hidden file name")
        uri = f"{self.directory}/{name}.avro"
        # Step 1
        rows = list(rows)
        buffer = io.BytesIO()
        try:
            fastavro.writer(buffer, _PARSED_SCHEMA, [dict(row) for row in rows])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StagingError(uri, f"cannot encode rows for staged file {uri}: {exc}") from exc
        data = buffer.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        # Step 2
        fs, directory = url_to_fs(self.directory)
        final_path = f"{directory}/{name}.avro"
        tmp_path = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
        try:
            fs.makedirs(directory, exist_ok=True)
            with fs.open(tmp_path, "wb") as out:
                out.write(data)
                _fsync(out)
            # Step 3
            fs.mv(tmp_path, final_path)
            if isinstance(fs, LocalFileSystem):
                _fsync_directory(directory)
        except OSError as exc:
            raise StagingError(uri, f"cannot write staged file {uri}: {exc}") from exc
        return StagedFile(uri=uri, count=len(rows), sha256=digest)


def _fsync(out: Any) -> None:
    """Flush and fsync a local file; remote filesystems make an object durable when it is closed."""
    fileno = getattr(out, "fileno", None)
    if fileno is None:
        return
    try:
        descriptor = fileno()
    except (OSError, io.UnsupportedOperation):
        return
    out.flush()
    os.fsync(descriptor)


def _fsync_directory(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
