"""The one error of line parsing."""

from __future__ import annotations

from onceflow.core.errors import OnceflowError


class MalformedLine(OnceflowError):  # noqa: N818 - reads as an outcome
    """A line that is not in the expected format; ``reason`` says what is wrong with it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
