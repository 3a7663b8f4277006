"""A driver killed during its query's first offset-log write can restart (onceflow.spark.runner.checkpoint_leftovers).

The kill leaves ``offsets/.0.<uuid>.tmp`` and no batch, and Spark (SPARK-53103) then refuses every start
of the query with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY; the chaos suite's driver kills met it. Real
queries on the session's local[2] Spark: a text file read to its end (``availableNow``) into ``noop``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from onceflow.spark.runner.checkpoint_leftovers import is_unfinished_write, remove_unfinished_first_write


def _run_to_end(spark: SparkSession, source: Path, checkpoint: Path) -> None:
    query = (
        spark.readStream.format("text")
        .load(str(source))
        .writeStream.format("noop")
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive


@pytest.fixture
def source(tmp_path: Path) -> Path:
    directory = tmp_path / "input"
    directory.mkdir()
    (directory / "lines.txt").write_text("a\nb\n")
    return directory


def _killed_during_first_write(checkpoint: Path) -> Path:
    """What a kill -9 of the driver between the temporary file and its rename leaves."""
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "metadata").write_text(f'{{"id":"{uuid.uuid4()}"}}')
    leftover = checkpoint / "offsets" / f".0.{uuid.uuid4()}.tmp"
    leftover.write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1')  # cut short
    return leftover


def test_spark_refuses_the_checkpoint_a_kill_during_the_first_write_left(
    spark: SparkSession, source: Path, tmp_path: Path
) -> None:
    _killed_during_first_write(tmp_path / "checkpoint")
    with pytest.raises(StreamingQueryException, match="STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"):
        _run_to_end(spark, source, tmp_path / "checkpoint")


def test_the_leftover_is_removed_and_the_query_then_runs(spark: SparkSession, source: Path, tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    leftover = _killed_during_first_write(checkpoint)
    checksum = leftover.with_name(f".{leftover.name}.crc")  # the local file system's checksum of it
    checksum.write_bytes(b"crc")
    removed = remove_unfinished_first_write(spark, str(checkpoint), job="j")
    assert [Path(p.removeprefix("file:")).name for p in removed] == [leftover.name]
    assert not leftover.exists() and not checksum.exists()  # Hadoop deletes a file with its checksum
    _run_to_end(spark, source, checkpoint)
    assert (checkpoint / "offsets" / "0").exists() and (checkpoint / "commits" / "0").exists()


def test_a_checkpoint_with_a_batch_or_a_foreign_file_is_left_as_it_is(
    spark: SparkSession, source: Path, tmp_path: Path
) -> None:
    # a batch in the log: Spark resumes from it and skips a later write's leftover
    resumed = tmp_path / "resumed"
    _run_to_end(spark, source, resumed)
    later = resumed / "offsets" / f".1.{uuid.uuid4()}.tmp"
    later.write_text("v1\n")
    assert remove_unfinished_first_write(spark, str(resumed), job="j") == []
    assert later.exists()
    _run_to_end(spark, source, resumed)
    # a file that is no write of Spark's: kept, and Spark's refusal names the directory
    foreign = tmp_path / "foreign"
    (foreign / "offsets").mkdir(parents=True)
    (foreign / "offsets" / "notes.txt").write_text("not a checkpoint of this job")
    assert remove_unfinished_first_write(spark, str(foreign), job="j") == []
    with pytest.raises(StreamingQueryException, match="STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"):
        _run_to_end(spark, source, foreign)


def test_only_the_temporary_files_of_sparks_atomic_writes_count_as_unfinished() -> None:
    assert is_unfinished_write(f".0.{uuid.uuid4()}.tmp") and is_unfinished_write(f"..0.{uuid.uuid4()}.tmp.crc")
    assert not any(is_unfinished_write(name) for name in ("0", ".0.crc", "notes.tmp", ".metadata.crc"))
