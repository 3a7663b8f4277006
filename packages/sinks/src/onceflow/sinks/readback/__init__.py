"""Reading what participants wrote, binding by binding: the replay audit's view of every sink.

:func:`reader_for` opens the :class:`BindingReader` of a participant's configured sink.
"""

from __future__ import annotations

from onceflow.sinks.readback.base import NO_BATCH, BindingReader, Row
from onceflow.sinks.readback.lakehouse import LakehouseReader
from onceflow.sinks.readback.tables import PostgresReader, SqliteReader
from onceflow.sinks.readback.topics import KafkaReader
from onceflow.sinks.server.settings import DeltaSink, IcebergSink, KafkaSink, PostgresSink, SinkSettings, SqliteSink


def reader_for(sink: SinkSettings) -> BindingReader:
    """The reader of one ``[[sinks]]`` entry of a participant's config (of one shard's: the reader sees the
    whole sink, every shard of its ``shards``)."""
    if isinstance(sink, SqliteSink):
        return SqliteReader(sink.name, sink.options.path, shards=sink.shards)
    if isinstance(sink, PostgresSink):
        return PostgresReader(
            sink.name, sink.options.dsn, connect_timeout_s=sink.options.connect_timeout_s, shards=sink.shards
        )
    if isinstance(sink, KafkaSink):
        return KafkaReader(
            sink.name, sink.options.kafka, sink.options.topic, sink.options.commits_topic, shards=sink.shards
        )
    if isinstance(sink, DeltaSink | IcebergSink):
        from onceflow.sinks.lakehouse.open import open_format

        return LakehouseReader(sink.name, open_format(sink.name, sink.options, create=False))
    raise TypeError(f"no reader for sink kind {type(sink).__name__}")


def delta_reader(name: str, root: str) -> LakehouseReader:
    """The reader of the Delta tables under ``root`` (a local directory; S3 roots need the sink's config)."""
    from onceflow.sinks.delta.format import DeltaFormat
    from onceflow.sinks.lakehouse.storage import TableStore

    return LakehouseReader(name, DeltaFormat(name, TableStore(root, create=False)))


__all__ = [
    "NO_BATCH",
    "BindingReader",
    "KafkaReader",
    "LakehouseReader",
    "PostgresReader",
    "Row",
    "SqliteReader",
    "delta_reader",
    "reader_for",
]
