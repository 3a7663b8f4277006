"""Stored tables: the topics the consumer stores, each into one table, and how their records decode."""

from onceflow.consumer.tables.decode import AvroDecoder, DecodedRecord, JsonDecoder, RecordDecoder, decoder_for
from onceflow.consumer.tables.stored import IP_COUNT_TABLE, STORE_SINK, StoredTable, StoredTables, ip_count_table

__all__ = [
    "IP_COUNT_TABLE",
    "STORE_SINK",
    "AvroDecoder",
    "DecodedRecord",
    "JsonDecoder",
    "RecordDecoder",
    "StoredTable",
    "StoredTables",
    "decoder_for",
    "ip_count_table",
]
