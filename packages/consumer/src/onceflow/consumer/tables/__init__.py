"""Stored tables: the topics the consumer stores, each into one table, and how their records decode."""

from onceflow.consumer.tables.decode import AvroDecoder, DecodedRecord, JsonDecoder, RecordDecoder, decoder_for
from onceflow.consumer.tables.stored import STORE_SINK, StoredTable, StoredTables

__all__ = [
    "STORE_SINK",
    "AvroDecoder",
    "DecodedRecord",
    "JsonDecoder",
    "RecordDecoder",
    "StoredTable",
    "StoredTables",
    "decoder_for",
]
