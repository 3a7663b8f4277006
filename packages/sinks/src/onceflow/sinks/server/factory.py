"""Open a sink participant from its settings."""

from __future__ import annotations

from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.server.settings import DeltaSink, IcebergSink, KafkaSink, PostgresSink, SinkSettings, SqliteSink


def open_sink(settings: SinkSettings) -> SinkParticipant:
    """The participant of one configured sink (or of its configured shard), ready to recover and serve."""
    shard = settings.shard_spec
    if isinstance(settings, SqliteSink):
        from onceflow.sinks.sqlite import SqliteParticipant

        return SqliteParticipant(
            settings.name, settings.options.path, busy_timeout_ms=settings.options.busy_timeout_ms, shard=shard
        )
    if isinstance(settings, PostgresSink):
        from onceflow.sinks.postgres import PostgresParticipant

        return PostgresParticipant(
            settings.name,
            settings.options.dsn,
            lock_timeout_ms=settings.options.lock_timeout_ms,
            connect_timeout_s=settings.options.connect_timeout_s,
            shard=shard,
        )
    if isinstance(settings, KafkaSink):
        from onceflow.sinks.kafka import KafkaParticipant

        options = settings.options
        return KafkaParticipant(
            settings.name,
            options.kafka,
            state_dir=options.state_dir,
            topic=options.topic,
            commits_topic=options.commits_topic,
            transaction_timeout_ms=options.transaction_timeout_ms,
            shard=shard,
        )
    if isinstance(settings, DeltaSink | IcebergSink):
        from onceflow.sinks.lakehouse.open import open_participant

        return open_participant(settings.name, settings.options, shard=shard)
    raise TypeError(f"unknown sink settings {type(settings).__name__}")
