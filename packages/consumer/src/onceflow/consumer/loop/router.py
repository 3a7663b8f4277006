"""Consumed records to rows of their stored tables: decoded, checked against the table, or rejected."""

from __future__ import annotations

import pyarrow as pa

from onceflow.consumer.exceptions import RecordRejected
from onceflow.consumer.store import ResultsStore, TableRow
from onceflow.consumer.tables import RecordDecoder, StoredTable, StoredTables, decoder_for
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.core.settings import KafkaSettings
from onceflow.sinks.exceptions import BindingRejected


class TableRouter:
    """Turns a record of a stored topic into a row of its table.

    A row's schema is checked against the table once per schema (the first record of each writer
    schema): the store creates the table, or adds the nullable columns the schema brings, or refuses
    it with the sinks' reason; records of a refused schema are rejected with that reason.
    """

    def __init__(self, tables: StoredTables, store: ResultsStore, kafka: KafkaSettings) -> None:
        self.tables = tables
        self.store = store
        schemas = SchemasTopic(kafka.bootstrap_servers, config=dict(kafka.properties))
        self._decoders: dict[str, RecordDecoder] = {t.topic: decoder_for(t, schemas) for t in tables}
        #: (table, schema id) -> None when the table takes rows of that schema, else why not.
        self._fits: dict[tuple[str, str], str | None] = {}

    def route(self, topic: str, value: bytes | None) -> TableRow:
        """The row of one record of ``topic``; :class:`RecordRejected` says why there is none."""
        table = self.tables.by_topic(topic)
        if table is None:
            raise RecordRejected(f"topic {topic!r} is not stored")
        decoded = self._decoders[topic].decode(value)
        nulls = [key for key in table.keys if decoded.row.get(key) is None]
        if nulls:
            raise RecordRejected(f"key column(s) {', '.join(nulls)} missing or null")
        reason = self._fit(table, decoded.schema_id, decoded.schema)
        if reason is not None:
            raise RecordRejected(reason)
        return TableRow(table, decoded.row, decoded.schema)

    def _fit(self, table: StoredTable, schema_id: str, schema: pa.Schema) -> str | None:
        key = (table.table, schema_id)
        if key not in self._fits:
            try:
                self.store.prepare_table(table, schema)
                self._fits[key] = None
            except BindingRejected as exc:
                self._fits[key] = f"does not fit: {exc}"
        return self._fits[key]
