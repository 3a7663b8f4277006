"""Read bindings back from Kafka topics: every committed record's value, decoded (Avro or JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable

from onceflow.contract import SinkBinding, ValueFormat
from onceflow.core.avro.arrow import json_field
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.core.errors import SerializationError
from onceflow.core.kafka import TopicRecord, read_committed
from onceflow.core.settings import KafkaSettings
from onceflow.sinks.kafka.markers import marker_key, read_last_committed_keys
from onceflow.sinks.readback.base import BindingReader, Row


class KafkaReader(BindingReader):
    """The topics of one Kafka cluster, read with read_committed; commit markers from ``commits_topic``."""

    def __init__(
        self,
        name: str,
        kafka: KafkaSettings,
        topic: str,
        commits_topic: str,
        *,
        timeout_s: float = 120.0,
        shards: int = 1,
    ) -> None:
        super().__init__(name, shards=shards)
        self.kafka = kafka
        self.topic = topic
        self.commits_topic = commits_topic
        self._timeout_s = timeout_s
        self._schemas = SchemasTopic(kafka.bootstrap_servers, config=dict(kafka.properties))

    def rows(
        self, binding: SinkBinding, *, on_undecodable: Callable[[TopicRecord, Exception], None] | None = None
    ) -> list[Row]:
        """Every committed record of the binding's topic, in offset order per partition.

        Avro values are decoded with the writer schema their fingerprint names (the schemas topic);
        JSON values are turned back into the binding's types. A value that does not decode (a null
        value included) raises, or, with ``on_undecodable``, is passed to it and skipped.
        """
        found: list[Row] = []
        for record in read_committed(self.kafka, binding.topic, timeout=self._timeout_s):
            try:
                found.append(self._decode(binding, record))
            except (SerializationError, ValueError) as exc:
                if on_undecodable is None:
                    raise
                on_undecodable(record, exc)
        return found

    def _decode(self, binding: SinkBinding, record: TopicRecord) -> Row:
        if record.value is None:
            raise ValueError(f"{binding.topic}[{record.partition}]@{record.offset}: a null value (tombstone)")
        if binding.value_format == ValueFormat.AVRO:
            return self._schemas.decode(record.value)
        doc = json.loads(record.value)
        if not isinstance(doc, dict):
            raise ValueError(f"{binding.topic}[{record.partition}]@{record.offset}: not a JSON object")
        schema = binding.schema
        if schema is not None:
            doc = {name: json_field(schema.field(name).type, doc.get(name)) for name in schema.names}
        return doc

    def last_committed(self, job: str) -> int:
        keys = {marker_key(name, job): name for name in self.record_names}
        last = read_last_committed_keys(self.kafka, self.commits_topic, keys, self._timeout_s)
        return self.whole({keys[key]: batch for key, batch in last.items()})
