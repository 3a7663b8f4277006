"""What a driver killed during its query's first offset-log write leaves in the checkpoint.

Spark writes each log entry as a temporary file renamed into place (``offsets/.0.<uuid>.tmp``, then
``offsets/0``). A ``kill -9`` between the two leaves the temporary file and no batch. The log's
readers skip such files, but since SPARK-53103 (Spark 4.1) a query that finds no batch in its offset
log checks that ``offsets/``, ``commits/`` and ``state/`` are empty, temporary files included, and
fails with ``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``: every restart of the job would fail the
same way. :func:`remove_unfinished_first_write` runs before each start of the query.

Steps:
    1. List ``offsets/`` through Hadoop's file system of the checkpoint (local, ``s3a://``, HDFS: the
       one Spark writes with). No directory, or a batch in it (a name that is a number), and nothing
       is touched: the query resumes from its log, which skips temporary files.
    2. Otherwise delete the temporary files of Spark's atomic writes (``.<name>.<uuid>.tmp`` and
       their ``.crc``) in ``offsets/`` and ``commits/``, and log each. Nothing else is deleted: any
       other file keeps Spark's refusal, which then names a checkpoint that is not the job's.

It reads through Hadoop, not the replay's ``CheckpointLog`` (the staging store): Spark's check lists
through Hadoop (which hides and deletes a file's ``.crc`` with it), and Hadoop reaches every
checkpoint Spark writes (``hdfs://`` too), where the staging store knows local paths and S3 only.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from onceflow.core.logging import get_logger

_log = get_logger(__name__)

#: The checkpoint's logs that Spark wants empty when its offset log holds no batch (``state/`` is
#: written only by a batch that is in the offset log).
LOG_DIRECTORIES = ("offsets", "commits")


def is_unfinished_write(name: str) -> bool:
    """True for the name of a temporary file of Spark's atomic writes, or of its checksum."""
    return name.startswith(".") and (name.endswith(".tmp") or name.endswith(".tmp.crc"))


def remove_unfinished_first_write(spark: SparkSession, checkpoint_location: str, *, job: str) -> list[str]:
    """Delete what a first offset-log write cut short left in ``checkpoint_location``; the paths deleted."""
    path_of: Any = spark._jvm.org.apache.hadoop.fs.Path  # type: ignore[union-attr]
    root = path_of(checkpoint_location)
    fs = root.getFileSystem(spark._jsparkSession.sessionState().newHadoopConf())
    # Step 1
    offsets = _names(fs, path_of(root, "offsets"))
    if not offsets or any(name.isdigit() for name in offsets):
        return []
    # Step 2
    removed: list[str] = []
    for directory in LOG_DIRECTORIES:
        path = path_of(root, directory)
        for name in _names(fs, path):
            if is_unfinished_write(name):
                leftover = path_of(path, name)
                fs.delete(leftover, False)
                removed.append(str(leftover))
                _log.warning("checkpoint.unfinished_write_removed", job=job, path=str(leftover))
    return removed


def _names(fs: Any, directory: Any) -> list[str]:
    """The names in ``directory``; none when it does not exist."""
    if not fs.exists(directory):
        return []
    return [status.getPath().getName() for status in fs.listStatus(directory)]
