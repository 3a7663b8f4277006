"""Domain exceptions shared by every onceflow package.

Each error means one thing and carries the ids needed to act on it. Packages add their own
exceptions (in their own ``exceptions`` modules) as subclasses of :class:`OnceflowError`.
"""

from __future__ import annotations

from typing import Final


class OnceflowError(Exception):
    """Base class of every onceflow error."""


class InvalidConfig(OnceflowError):  # noqa: N818 - the name the design uses
    """A setting has a bad value. ``setting`` names it (dotted path or env var), ``reason`` says why."""

    def __init__(self, setting: str, reason: str, *, source: str | None = None) -> None:
        self.setting = setting
        self.reason = reason
        self.source = source
        where = f" (from {source})" if source else ""
        super().__init__(f"invalid setting {setting!r}{where}: {reason}")


class SerializationError(OnceflowError):
    """Bytes could not be turned into a record, or a record into bytes."""


class UnknownSchema(SerializationError):  # noqa: N818
    """A single-object encoded value names a schema fingerprint this reader does not know."""

    def __init__(self, fingerprint: bytes, known: list[str]) -> None:
        self.fingerprint = fingerprint
        super().__init__(
            f"unknown Avro schema fingerprint {fingerprint.hex()}; known schemas: {', '.join(known) or 'none'}"
        )


class CorruptRecord(SerializationError):  # noqa: N818
    """Bytes are not a valid record: bad header, truncated, or not decodable with their schema."""


class WriterFenced(OnceflowError):  # noqa: N818
    """Another writer registered for the job with a higher epoch; this one must stop."""

    def __init__(self, job: str, epoch: int, current_epoch: int) -> None:
        self.job = job
        self.epoch = epoch
        self.current_epoch = current_epoch
        super().__init__(
            f"writer of job {job!r} with epoch {epoch} is fenced: another writer owns the job (epoch {current_epoch})"
        )


class ProducerFenced(OnceflowError):  # noqa: N818
    """A Kafka transactional producer was fenced by a newer instance with the same transactional.id."""

    def __init__(self, transactional_id: str, detail: str = "") -> None:
        self.transactional_id = transactional_id
        super().__init__(f"producer {transactional_id!r} was fenced by a newer instance {detail}".rstrip())


#: The longest value an error message shows whole (a request's path or URI).
MAX_SHOWN_CHARS: Final = 200


def shown(value: str) -> str:
    """``value`` cut to :data:`MAX_SHOWN_CHARS` for an error message."""
    return value if len(value) <= MAX_SHOWN_CHARS else value[:MAX_SHOWN_CHARS] + "..."


class UnsupportedColumnType(OnceflowError):  # noqa: N818 - says what is wrong
    """An output column has a type no sink stores. Names the output, the column and the type."""

    def __init__(self, output: str, column: str, type_name: str) -> None:
        self.output = output
        self.column = column
        self.type_name = type_name
        super().__init__(
            f"output {output!r}: column {column!r} has type {type_name}, which onceflow sinks cannot store "
            "(supported: string, byte/short/int/long, float/double, decimal, boolean, binary, date, timestamp)"
        )
