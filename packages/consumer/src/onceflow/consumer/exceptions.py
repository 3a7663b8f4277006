"""Errors of the results consumer, its query API and the audit."""

from __future__ import annotations

from onceflow.core.errors import OnceflowError


class ConsumerError(OnceflowError):
    """Base class of the consumer package's errors."""


class StaleOffsets(ConsumerError):  # noqa: N818 - names the condition, like the design's errors
    """A batch was built on offsets that are no longer the stored ones: another instance applied the
    partition in between (a rebalance this instance has not seen yet). The batch is rolled back whole."""

    def __init__(self, topic: str, partition: int, expected: int | None, stored: int | None) -> None:
        self.topic = topic
        self.partition = partition
        self.expected = expected
        self.stored = stored
        super().__init__(
            f"offsets of {topic}[{partition}] moved: expected next offset {expected}, the store has {stored}"
        )


class StoreUnreachable(ConsumerError):  # noqa: N818 - names the condition
    """The results store cannot be opened: the message names the setting (``store.dsn``) and where it
    points, never a password."""

    def __init__(self, setting: str, where: str, reason: str) -> None:
        self.setting = setting
        super().__init__(f"invalid setting '{setting}' ({where}): cannot open the results store: {reason}")


class RecordRejected(ConsumerError):  # noqa: N818
    """A record cannot be stored: its value does not decode, or its row does not fit its table."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class UndecodableResult(ConsumerError):  # noqa: N818
    """A record of a stored topic cannot be stored (and its table is set to stop on such records)."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str, table: str = "") -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason
        into = f" into table {table!r}" if table else ""
        super().__init__(f"record {topic}[{partition}]@{offset} cannot be stored{into}: {reason}")


class UnknownTable(ConsumerError):  # noqa: N818
    """A request names a table the consumer does not store (NOT_FOUND)."""

    def __init__(self, table: str, known: list[str]) -> None:
        self.table = table
        super().__init__(f"table: {table!r} is not a stored table (stored: {', '.join(known) or 'none'})")


class InvalidQuery(ConsumerError):  # noqa: N818 - like InvalidConfig
    """A query or audit request has a bad argument; ``argument`` names it."""

    def __init__(self, argument: str, reason: str) -> None:
        self.argument = argument
        self.reason = reason
        super().__init__(f"{argument}: {reason}")


class FeatureUnavailable(ConsumerError):  # noqa: N818
    """The server was started without what a request needs (no consumer to watch, no audit config)."""
