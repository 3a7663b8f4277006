"""What a write task sends back to the driver: the staged file of its attempt."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import WriterCommitMessage

from onceflow.contract.staging import StagedFile


@dataclass(frozen=True)
class StagedFileMessage(WriterCommitMessage):
    """The file one task attempt staged (None when the task had no rows), with the task's ids for logs."""

    file: StagedFile | None
    partition: int
    task_attempt: int
