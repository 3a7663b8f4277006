"""Writer schemas where any reader can resolve a fingerprint: a compacted topic keyed by fingerprint.

A Kafka sink publishes the Avro schema of each output it writes (key = the 8-byte CRC-64-AVRO
fingerprint in hex, value = the schema's JSON) before the job's first batch. A reader resolves the
fingerprint of a single-object encoded value by reading the topic to its end (read_committed), and
reads it again when it meets a fingerprint it does not know yet.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from confluent_kafka import Producer

from onceflow.core.avro.schemas import ACCESS_EVENT_SCHEMA, IP_COUNT_SCHEMA
from onceflow.core.avro.single_object import HEADER_SIZE, MAGIC, SingleObjectSerde, schema_fingerprint
from onceflow.core.errors import CorruptRecord, UnknownSchema
from onceflow.core.kafka import (
    DEFAULT_REPLICATION,
    Replication,
    TopicNotFound,
    TopicSpec,
    ensure_topics,
    idempotent_producer_config,
    produce_acknowledged,
    read_to_end,
)
from onceflow.core.topics import SCHEMAS_TOPIC


class SchemasTopic:
    """Publish and resolve Avro writer schemas in ``topic`` of the cluster at ``bootstrap_servers``
    (created compacted, with ``replication``, by the first publisher)."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str = SCHEMAS_TOPIC,
        *,
        config: dict[str, Any] | None = None,
        replication: Replication = DEFAULT_REPLICATION,
    ) -> None:
        self.topic = topic
        self._replication = replication
        self._config = {"bootstrap.servers": bootstrap_servers, **(config or {})}
        # onceflow's own record schemas resolve without the topic (the IP-count sink never publishes them);
        # their times read as epoch milliseconds, as everywhere in onceflow
        self._serdes: dict[bytes, SingleObjectSerde[dict[str, Any]]] = {
            schema_fingerprint(schema): SingleObjectSerde(schema, logical_types=False)
            for schema in (IP_COUNT_SCHEMA, ACCESS_EVENT_SCHEMA)
        }
        self._lock = threading.Lock()

    def ensure_topic(self, timeout: float = 30.0) -> None:
        spec = TopicSpec(self.topic, 1, {"cleanup.policy": "compact"})
        ensure_topics(self._config, [spec], replication=self._replication, timeout=timeout)

    def publish(self, schema: dict[str, Any], timeout: float = 30.0) -> bytes:
        """Publish ``schema`` (idempotent: the same key and value again) and return its fingerprint."""
        self.ensure_topic(timeout)
        fingerprint = schema_fingerprint(schema)
        producer = Producer(idempotent_producer_config(self._config, acks="all"))
        record = {"key": fingerprint.hex().encode(), "value": json.dumps(schema, sort_keys=True).encode()}
        produce_acknowledged(producer, self.topic, [record], timeout=timeout)
        with self._lock:
            self._serdes.setdefault(fingerprint, SingleObjectSerde(schema, logical_types=True))
        return fingerprint

    def _load(self, timeout: float = 30.0) -> None:
        """Read the whole topic (read_committed) into the cache; a topic not created yet holds nothing."""
        try:
            for record in read_to_end(self._config, self.topic, until="last_stable", timeout=timeout):
                if record.value is None:
                    continue
                schema = json.loads(record.value)
                with self._lock:
                    self._serdes.setdefault(schema_fingerprint(schema), SingleObjectSerde(schema, logical_types=True))
        except TopicNotFound:
            return

    def serde_for(self, value: bytes) -> SingleObjectSerde[dict[str, Any]]:
        """The serde of the writer schema that wrote ``value`` (its ``schema`` is that writer schema).

        Raises :class:`CorruptRecord` when ``value`` is not single-object encoded and
        :class:`UnknownSchema` when neither onceflow nor the schemas topic knows its fingerprint.
        """
        if len(value) < HEADER_SIZE or value[:2] != MAGIC:
            raise CorruptRecord(f"not an Avro single-object encoded value: {value[:HEADER_SIZE].hex() or 'empty'}")
        fingerprint = value[2:HEADER_SIZE]
        serde = self._serdes.get(fingerprint)
        if serde is None:
            self._load()
            serde = self._serdes.get(fingerprint)
        if serde is None:
            raise UnknownSchema(fingerprint, [f"{f.hex()} in {self.topic}" for f in self._serdes])
        return serde

    def decode(self, value: bytes) -> dict[str, Any]:
        """The record in a single-object encoded ``value``, with its writer schema resolved here."""
        return self.serde_for(value).decode(value)
