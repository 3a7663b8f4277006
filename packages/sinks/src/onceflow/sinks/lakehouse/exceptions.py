"""Errors of the lakehouse sinks (Delta Lake, Apache Iceberg)."""

from __future__ import annotations

from onceflow.sinks.exceptions import SinkError


class TableStoreUnavailable(SinkError):  # noqa: N818 - a state, like UNAVAILABLE
    """The object store or file system holding the tables failed a read, write or delete.

    A prepare that meets it votes no; a commit or abort fails with UNAVAILABLE and the coordinator
    retries it. ``uri`` names the file or table.
    """

    def __init__(self, uri: str, message: str) -> None:
        self.uri = uri
        super().__init__(message)


class CommitConflict(SinkError):  # noqa: N818
    """Another writer committed to the table between our read of it and our commit.

    The participant re-reads the table (a batch already there is acknowledged, not written twice)
    and commits again; after its retries the Commit RPC fails with UNAVAILABLE and the coordinator
    re-sends it, so a conflict is retried, never lost.
    """

    def __init__(self, table: str, message: str) -> None:
        self.table = table
        super().__init__(message)
