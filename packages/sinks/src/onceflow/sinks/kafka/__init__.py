"""The Kafka topic sink participant (transactional producer + compacted commit markers)."""

from onceflow.sinks.kafka.journal import PreparedJournal
from onceflow.sinks.kafka.markers import NO_BATCH, read_last_committed
from onceflow.sinks.kafka.participant import KafkaParticipant

__all__ = ["NO_BATCH", "KafkaParticipant", "PreparedJournal", "read_last_committed"]
