"""Errors of staged files. Each names the file (its URI) and what is wrong with it."""

from __future__ import annotations

from onceflow.core.errors import OnceflowError


class StagingError(OnceflowError):
    """A staged file cannot be written or is not what its writer reported."""

    def __init__(self, uri: str, message: str) -> None:
        self.uri = uri
        super().__init__(message)


class StagedFileMissing(StagingError):  # noqa: N818 - the name says what happened
    """The staged file does not exist (garbage-collected, or never written)."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri, f"staged file {uri} does not exist")


class StagedFileChecksumMismatch(StagingError):  # noqa: N818
    """The file's bytes do not hash to the SHA-256 its writer reported."""

    def __init__(self, uri: str, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(uri, f"staged file {uri} has sha256 {actual}, expected {expected}")


class StagedFileCorrupt(StagingError):  # noqa: N818
    """The file is not a readable Arrow IPC file."""


class StagedFileTruncated(StagedFileCorrupt):
    """The file holds fewer rows than its writer reported."""

    def __init__(self, uri: str, expected: int, actual: int) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(uri, f"staged file {uri} holds {actual} rows, expected {expected}")
