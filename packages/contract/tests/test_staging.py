"""Staged files: round trip through a real filesystem, and every way a file can be wrong."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from onceflow.contract.staging import (
    InvalidStagingUri,
    StagedFile,
    StagedFileChecksumMismatch,
    StagedFileCorrupt,
    StagedFileMissing,
    StagedFileTruncated,
    StagingError,
    StagingWriter,
    batch_uri,
    delete_batch,
    describe_staged,
    list_staged,
    read_manifest,
    read_staged,
)
from onceflow.core.avro import IpCount

#: The rows' schema (any schema does: staging stores what the job's output is).
SCHEMA = pa.schema(
    [
        pa.field("window_start", pa.int64(), nullable=False),
        pa.field("window_end", pa.int64(), nullable=False),
        pa.field("ip", pa.string(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)
ROWS = [
    IpCount(window_start=1_700_000_000_000, window_end=1_700_000_005_000, ip="10.0.0.1", count=3),
    IpCount(window_start=1_700_000_000_000, window_end=1_700_000_005_000, ip="10.0.0.2", count=1),
    IpCount(window_start=1_700_000_005_000, window_end=1_700_000_010_000, ip="10.0.0.1", count=7),
]


def _local(uri: str) -> Path:
    assert uri.startswith("file://")
    return Path(uri.removeprefix("file://"))


def test_round_trip_writes_under_job_and_batch(tmp_path: Path) -> None:
    staged = StagingWriter(str(tmp_path), "ipcount", 7).write("part-0-attempt-0", ROWS, SCHEMA)

    path = _local(staged.uri)
    assert path == tmp_path / "ipcount" / "7" / "part-0-attempt-0.arrow"
    assert staged.count == 3
    assert staged.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert read_staged(staged).to_pylist() == ROWS
    assert [p.name for p in path.parent.iterdir()] == ["part-0-attempt-0.arrow"], "no temporary file is left"


def test_file_uri_root_and_empty_file(tmp_path: Path) -> None:
    staged = StagingWriter(f"file://{tmp_path}", "job", 0).write("empty", [], SCHEMA)
    assert staged.count == 0
    assert read_staged(staged).to_pylist() == []


def test_rewrite_of_an_attempt_replaces_the_file(tmp_path: Path) -> None:
    writer = StagingWriter(str(tmp_path), "job", 1)
    first = writer.write("part-0", ROWS, SCHEMA)
    second = writer.write("part-0", ROWS[:1], SCHEMA)
    assert first.uri == second.uri
    assert read_staged(second).to_pylist() == ROWS[:1]
    with pytest.raises(StagedFileChecksumMismatch):
        read_staged(first)


def test_missing_file_names_the_uri(tmp_path: Path) -> None:
    uri = f"file://{tmp_path}/job/3/gone.arrow"
    with pytest.raises(StagedFileMissing, match=f"{uri} does not exist") as info:
        read_staged(StagedFile(uri=uri, count=1, sha256="00" * 32))
    assert info.value.uri == uri
    assert isinstance(info.value, StagingError)


def test_checksum_mismatch_names_uri_expected_and_actual(tmp_path: Path) -> None:
    staged = StagingWriter(str(tmp_path), "job", 2).write("part-0", ROWS, SCHEMA)
    path = _local(staged.uri)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()

    with pytest.raises(StagedFileChecksumMismatch) as info:
        read_staged(staged)
    message = str(info.value)
    assert staged.uri in message and staged.sha256 in message and actual in message
    assert (info.value.expected, info.value.actual) == (staged.sha256, actual)


def test_truncated_file_is_corrupt_and_names_the_uri(tmp_path: Path) -> None:
    staged = StagingWriter(str(tmp_path), "job", 2).write("part-0", ROWS, SCHEMA)
    path = _local(staged.uri)
    cut = path.read_bytes()[:-20]
    path.write_bytes(cut)
    # A writer that reported the truncated bytes' checksum still cannot pass it off as whole.
    lying = StagedFile(staged.uri, staged.count, hashlib.sha256(cut).hexdigest())
    with pytest.raises(StagedFileCorrupt, match=staged.uri):
        read_staged(lying)


def test_fewer_rows_than_reported_is_truncated(tmp_path: Path) -> None:
    staged = StagingWriter(str(tmp_path), "job", 2).write("part-0", ROWS, SCHEMA)
    with pytest.raises(StagedFileTruncated, match=f"{staged.uri} holds 3 rows, expected 5"):
        read_staged(StagedFile(staged.uri, 5, staged.sha256))
    with pytest.raises(StagedFileCorrupt, match="holds 3 rows, expected 2"):
        read_staged(StagedFile(staged.uri, 2, staged.sha256))


def test_not_arrow_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "junk.arrow"
    path.write_bytes(b"not arrow at all")
    staged = StagedFile(f"file://{path}", 1, hashlib.sha256(path.read_bytes()).hexdigest())
    with pytest.raises(StagedFileCorrupt, match=f"{staged.uri} is not an Arrow IPC file"):
        read_staged(staged)


def test_delete_batch_is_idempotent_and_keeps_other_batches(tmp_path: Path) -> None:
    StagingWriter(str(tmp_path), "job", 1).write("a", ROWS, SCHEMA)
    kept = StagingWriter(str(tmp_path), "job", 2).write("a", ROWS, SCHEMA)

    assert delete_batch(str(tmp_path), "job", 1) is True
    assert delete_batch(str(tmp_path), "job", 1) is False
    assert not (tmp_path / "job" / "1").exists()
    assert read_staged(kept).to_pylist() == ROWS


def test_bad_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="job name"):
        batch_uri(str(tmp_path), "a/b", 1)
    with pytest.raises(ValueError, match="batch must be >= 0"):
        StagingWriter(str(tmp_path), "job", -1)
    with pytest.raises(ValueError, match="file name"):
        StagingWriter(str(tmp_path), "job", 1).write("../x", ROWS, SCHEMA)


def test_unencodable_rows_name_the_file(tmp_path: Path) -> None:
    bad: list[Any] = [{"window_start": "soon", "window_end": 1, "ip": "x", "count": 1}]
    with pytest.raises(StagingError, match=r"part-9\.arrow"):
        StagingWriter(str(tmp_path), "job", 1).write("part-9", bad, SCHEMA)


@pytest.mark.parametrize("root", ["memory://staging", "hdfs://nn/staging", "ftp://host/staging", "x::file:///tmp"])
def test_a_root_on_a_store_staging_does_not_support_is_refused_before_any_write(root: str) -> None:
    with pytest.raises(InvalidStagingUri, match="is not a staging URI"):
        StagingWriter(root, "job", 4)


def test_any_schema_round_trips_with_the_schema_in_the_file(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            pa.field("name", pa.string()),
            pa.field("amount", pa.decimal128(12, 3)),
            pa.field("at", pa.timestamp("us", tz="UTC")),
            pa.field("day", pa.date32()),
            pa.field("raw", pa.binary()),
            pa.field("ok", pa.bool_()),
        ]
    )
    rows = [
        {
            "name": "ü",
            "amount": decimal.Decimal("1.250"),
            "at": dt.datetime(2026, 11, 24, 1, 2, 3, 456789, tzinfo=dt.UTC),
            "day": dt.date(2026, 11, 24),
            "raw": b"\x00\xff",
            "ok": True,
        },
        {"name": None, "amount": None, "at": None, "day": None, "raw": None, "ok": None},
    ]
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    staged = StagingWriter(str(tmp_path), "job", 1).write_batches("part-0", schema, [batch], output="wide")
    assert (staged.count, staged.output) == (2, "wide")
    table = read_staged(staged)
    assert table.schema == schema
    assert table.to_pylist() == rows


def test_side_files_are_listed_and_described(tmp_path: Path) -> None:
    writer = StagingWriter(str(tmp_path), "job", 5)
    written = writer.write("side-dead_letters-part-00001", ROWS, SCHEMA, output="dead_letters")
    writer.write("part-00000-epoch-1-attempt-7", ROWS, SCHEMA)
    (tmp_path / "job" / "5" / ".side-x.tmp").write_bytes(b"partial")
    assert [name for name, _ in list_staged(str(tmp_path), "job", 5, prefix="side-")] == [
        "side-dead_letters-part-00001"
    ]
    assert describe_staged(written.uri, "dead_letters") == written
    assert list_staged(str(tmp_path), "job", 99) == []


def test_a_manifest_lists_staged_files_and_is_not_a_staged_file(tmp_path: Path) -> None:
    writer = StagingWriter(str(tmp_path), "job", 5)
    files = [writer.write(f"part-0000{i}", ROWS, SCHEMA, output="by_ip") for i in range(2)]
    uri = writer.write_manifest("manifest-by_ip-epoch-3", files)
    assert uri.endswith("/job/5/manifest-by_ip-epoch-3.files.json")
    assert read_manifest(str(tmp_path), "job", 5, "manifest-by_ip-epoch-3") == files
    assert read_manifest(str(tmp_path), "job", 5, "manifest-by_ip-epoch-4") is None
    assert [name for name, _ in list_staged(str(tmp_path), "job", 5)] == ["part-00000", "part-00001"]
    # A later attempt replaces the manifest; an empty one is a derived output without rows.
    writer.write_manifest("manifest-by_ip-epoch-3", [])
    assert read_manifest(str(tmp_path), "job", 5, "manifest-by_ip-epoch-3") == []
    (tmp_path / "job" / "5" / "manifest-bad.files.json").write_text('{"files": [{"uri": 1}]}')
    with pytest.raises(StagedFileCorrupt, match=r"manifest-bad.files.json is not a list of staged files"):
        read_manifest(str(tmp_path), "job", 5, "manifest-bad")
    with pytest.raises(ValueError, match="must be a plain"):
        writer.write_manifest("../escape", files)
