"""Sink bindings: one output of a job written to one table or topic of one participant connection.

A participant hosts *connections* (a SQLite file, a PostgreSQL database, a Kafka cluster); a job
binds each of its named outputs to one or more of them and says which table or topic to write, and
how. The driver registers the bindings with the coordinator, which hands them to the participant
with every prepare and commit, so the participant needs no job-specific configuration.
"""

from __future__ import annotations

import base64
import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import pyarrow as pa

from onceflow.contract.schema import schema_from_bytes, schema_to_bytes

#: The output a job with a single result writes (and what staged files without an output belong to).
DEFAULT_OUTPUT: Final = "results"
#: The side output undecodable source records go to, committed with the batch's results.
DEAD_LETTERS_OUTPUT: Final = "dead_letters"

#: Output, table, topic and column names: what every sink accepts without quoting surprises.
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
RECORD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class SinkMode(enum.StrEnum):
    """How an output's rows reach a table or topic."""

    #: A row replaces the stored row with the same key columns (update-mode results).
    UPSERT = "upsert"
    #: Every row is added; a replayed batch is recognised by its transaction id, not by a key.
    APPEND = "append"


class ValueFormat(enum.StrEnum):
    """How a Kafka sink encodes a row as a record value."""

    #: Avro single-object encoding; the writer schema is published in the schemas topic.
    AVRO = "avro"
    #: One JSON object per record (timestamps as ISO-8601, bytes as base64, decimals as strings).
    JSON = "json"


class InvalidBinding(ValueError):  # noqa: N818 - a ValueError that names the binding and field
    """A binding's field has a value no sink accepts."""


@dataclass(frozen=True)
class SinkBinding:
    """Where and how one output goes to one connection (``sink``) of a participant.

    ``table`` is for SQLite and PostgreSQL connections, ``topic`` (with ``value_format``,
    ``headers`` and ``record_name``) for Kafka ones; ``keys`` are the upsert key columns of a table,
    or the columns of a Kafka record's key. ``schema`` is the output's Arrow schema, which the
    participant checks the table against (and creates it from) before any batch runs.
    """

    sink: str
    output: str = DEFAULT_OUTPUT
    table: str = ""
    topic: str = ""
    mode: SinkMode = SinkMode.UPSERT
    keys: tuple[str, ...] = ()
    value_format: ValueFormat = ValueFormat.AVRO
    headers: tuple[str, ...] = ()
    record_name: str = ""
    schema: pa.Schema | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name, value in (("output", self.output), ("table", self.table)):
            if value and not NAME.match(value):
                raise InvalidBinding(f"binding {self.describe()}: {name} {value!r} must match {NAME.pattern}")
        if self.topic and not TOPIC.match(self.topic):
            raise InvalidBinding(f"binding {self.describe()}: topic {self.topic!r} is not a valid Kafka topic name")
        if self.record_name and not RECORD_NAME.match(self.record_name):
            raise InvalidBinding(
                f"binding {self.describe()}: record_name {self.record_name!r} is not an Avro full name"
            )
        if self.table and self.topic:
            raise InvalidBinding(f"binding {self.describe()}: set table (a database) or topic (Kafka), not both")
        if self.mode is SinkMode.UPSERT and self.table and not self.keys:
            raise InvalidBinding(f"binding {self.describe()}: mode upsert needs key columns (keys = [...])")
        if self.schema is not None:
            names = set(self.schema.names)
            for kind, columns in (("key", self.keys), ("header", self.headers)):
                missing = [c for c in columns if c not in names]
                if missing:
                    raise InvalidBinding(
                        f"binding {self.describe()}: {kind} column(s) {', '.join(missing)} are not in output "
                        f"{self.output!r} (columns: {', '.join(self.schema.names)})"
                    )

    def describe(self) -> str:
        """``<output> -> <sink>/<table or topic>`` for messages and logs."""
        where = self.table or self.topic or "?"
        return f"{self.output} -> {self.sink}/{where}"

    def with_schema(self, schema: pa.Schema) -> SinkBinding:
        return replace(self, schema=schema)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (logs, journals, the coordinator's log); the schema as base64 Arrow IPC."""
        doc: dict[str, Any] = {
            "sink": self.sink,
            "output": self.output,
            "table": self.table,
            "topic": self.topic,
            "mode": self.mode.value,
            "keys": list(self.keys),
            "value_format": self.value_format.value,
            "headers": list(self.headers),
            "record_name": self.record_name,
        }
        if self.schema is not None:
            doc["schema"] = base64.b64encode(schema_to_bytes(self.schema)).decode("ascii")
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> SinkBinding:
        """The inverse of :meth:`to_dict`; :class:`InvalidBinding` names what is wrong."""
        try:
            schema = None
            if doc.get("schema"):
                schema = schema_from_bytes(base64.b64decode(doc["schema"]))
            return cls(
                sink=str(doc["sink"]),
                output=str(doc.get("output") or DEFAULT_OUTPUT),
                table=str(doc.get("table", "")),
                topic=str(doc.get("topic", "")),
                mode=SinkMode(doc.get("mode") or SinkMode.UPSERT),
                keys=tuple(str(k) for k in doc.get("keys", ())),
                value_format=ValueFormat(doc.get("value_format") or ValueFormat.AVRO),
                headers=tuple(str(h) for h in doc.get("headers", ())),
                record_name=str(doc.get("record_name", "")),
                schema=schema,
            )
        except (KeyError, TypeError) as exc:
            raise InvalidBinding(f"binding {dict(doc)!r} is incomplete: {exc}") from exc
        except ValueError as exc:
            if isinstance(exc, InvalidBinding):
                raise
            raise InvalidBinding(f"binding {dict(doc)!r}: {exc}") from exc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SinkBinding:
        return cls.from_dict(json.loads(text))
