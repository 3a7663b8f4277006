"""What a write task sends back to the driver: the staged file of its attempt."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import WriterCommitMessage

from onceflow.core.staging import StagedFile


@dataclass(frozen=True)
class StagedFileMessage(WriterCommitMessage):
    """``(uri, count, sha256)`` of the Avro file one task attempt staged, with the task's ids for logs."""

    uri: str
    count: int
    sha256: str
    partition: int
    task_attempt: int

    @property
    def staged_file(self) -> StagedFile:
        return StagedFile(uri=self.uri, count=self.count, sha256=self.sha256)
