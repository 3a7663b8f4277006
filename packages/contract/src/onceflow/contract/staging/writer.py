"""Write a Spark task attempt's output as one staged, self-describing Arrow IPC file."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from onceflow.contract.bindings import DEFAULT_OUTPUT
from onceflow.contract.staging.exceptions import StagingError
from onceflow.contract.staging.files import StagedFile, batch_location
from onceflow.contract.staging.store import StagingStore, default_store

#: Staged files are Arrow IPC files ("Feather v2"): the writer schema is in the file, record batches
#: are written as Spark hands them over (no per-row work), and readers map them without decoding.
#: docs/benchmarks.md ("Staging format") compares it with Avro containers and Parquet.
SUFFIX = ".arrow"
#: A manifest lists staged files (JSON): see :meth:`StagingWriter.write_manifest`.
MANIFEST_SUFFIX = ".files.json"


class StagingWriter:
    """Writes the staged files of one micro-batch of one job under ``<staging_root>/<job>/<batch>/``.

    Each write publishes a complete file or nothing (:meth:`StagingStore.publish`): readers never see
    a partial file under its final name. On a local filesystem the file and its directory are fsynced,
    so a reported file survives a crash of the machine, not only of the process; on S3 an object is
    durable once its upload completed.
    """

    def __init__(self, staging_root: str, job: str, batch: int, *, store: StagingStore | None = None) -> None:
        self.location = batch_location(staging_root, job, batch)
        self.directory = self.location.uri
        self.job = job
        self.batch = batch
        self.store = store or default_store()

    def write_batches(
        self, name: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch], *, output: str = DEFAULT_OUTPUT
    ) -> StagedFile:
        """Write ``batches`` (all of ``schema``) to ``<name>.arrow`` and return its :class:`StagedFile`.

        Steps:
            1. Encode the batches as an Arrow IPC file in memory (the schema first) and hash the bytes.
            2. Publish the bytes as ``<name>.arrow``, completely or not at all, replacing an earlier
               attempt's file (:meth:`StagingStore.publish`).
        """
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"staged file name {name!r} must be a plain, non-hidden file name")
        uri = f"{self.directory}/{name}{SUFFIX}"
        # Step 1
        sink = pa.BufferOutputStream()
        count = 0
        try:
            with pa.ipc.new_file(sink, schema) as writer:
                for batch in batches:
                    if batch.num_rows:
                        writer.write_batch(batch)
                        count += batch.num_rows
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError) as exc:
            raise StagingError(uri, f"cannot encode rows for staged file {uri}: {exc}") from exc
        data = sink.getvalue().to_pybytes()
        digest = hashlib.sha256(data).hexdigest()
        # Step 2
        self._publish(f"{name}{SUFFIX}", data)
        return StagedFile(uri=uri, count=count, sha256=digest, output=output)

    def write_manifest(self, name: str, files: Sequence[StagedFile]) -> str:
        """Publish ``<name>.files.json``: the descriptors of files staged by tasks whose commit messages
        only the writer of another Spark job saw (a derived output written before the main one).
        Returns its URI. Replaces an earlier manifest of the same name."""
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"manifest name {name!r} must be a plain, non-hidden file name")
        document = {"files": [dataclasses.asdict(f) for f in files]}
        return self._publish(f"{name}{MANIFEST_SUFFIX}", json.dumps(document, sort_keys=True).encode())

    def _publish(self, filename: str, data: bytes) -> str:
        """Write ``data`` to ``filename`` in the batch directory, completely or not at all; return its URI."""
        location = self.location.child(filename)
        self.store.publish(location, data)
        return location.uri

    def write(
        self,
        name: str,
        rows: Iterable[Mapping[str, Any]],
        schema: pa.Schema,
        *,
        output: str = DEFAULT_OUTPUT,
    ) -> StagedFile:
        """Write rows given as dicts, typed by ``schema`` (tools and tests; Spark tasks hand over Arrow batches)."""
        try:
            table = pa.Table.from_pylist([dict(row) for row in rows], schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError, TypeError, ValueError) as exc:
            uri = f"{self.directory}/{name}{SUFFIX}"
            raise StagingError(uri, f"cannot encode rows for staged file {uri}: {exc}") from exc
        return self.write_batches(name, schema, table.to_batches(), output=output)
