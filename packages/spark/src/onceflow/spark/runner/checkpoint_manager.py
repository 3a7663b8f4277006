"""Which of Spark's checkpoint file managers writes the job's checkpoint.

Spark writes every offset-log, commit-log and state-store file as a temporary file renamed into
place (``CheckpointFileManager.createAtomic``), refusing a destination that exists. Its default
manager goes through Hadoop's ``FileContext``, whose rename refuses an existing destination
atomically on HDFS; the FileSystem-based manager checks for the destination and then renames.

- ``s3://``/``s3a://``: the FileSystem-based manager. It writes a log entry with one create and one
  rename and no directory probes, which S3 API stores that keep no directory markers (S3Proxy's
  filesystem backend) need; S3 has no atomic rename for either manager to use.
- A local path (no scheme, or ``file:``): the FileSystem-based manager too, because on the local file
  system the default is no more atomic. ``FileContext`` reaches it through Hadoop's
  ``DelegateToFileSystem``, which leaves a rename that must not overwrite to
  ``AbstractFileSystem.renameInternal(src, dst, overwrite)``: it reads the destination's link status and
  then calls ``rename(2)``, which replaces (Hadoop's own comment: "deals with overwrite in a non-atomic
  way"). What the default adds is that link-status read, which Hadoop makes by starting ``readlink``
  when it has no native library (PySpark ships none): about 17 processes every micro-batch, measured in
  ``docs/benchmarks.md``.
- Anything else (``hdfs://``, ``abfs://``, ...): Spark's default.

So on a local or object-store checkpoint, with either manager, two drivers of one job are kept apart
by the coordinator, not by the checkpoint: the last driver to register holds the job's writer epoch,
the other's next call is fenced and it stops; a batch both planned commits once, as the transaction
``<job>:<batch>``. docs/architecture.md ("The checkpoint manager") names the one overlap that only a
file system with an atomic no-overwrite rename could stop.
"""

from __future__ import annotations

from typing import Final

from onceflow.spark.runner.object_store import on_object_store
from onceflow.spark.runner.topology import is_local_path

#: The Spark setting naming the checkpoint manager's class.
MANAGER_SETTING: Final = "spark.sql.streaming.checkpointFileManagerClass"
#: Spark's manager over Hadoop's ``FileSystem`` API: check the destination, then rename.
FILE_SYSTEM_MANAGER: Final = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


def checkpoint_manager_conf(checkpoint_location: str) -> dict[str, str]:
    """The manager setting for a checkpoint at ``checkpoint_location``; empty to keep Spark's default."""
    if on_object_store(checkpoint_location) or is_local_path(checkpoint_location):
        return {MANAGER_SETTING: FILE_SYSTEM_MANAGER}
    return {}
