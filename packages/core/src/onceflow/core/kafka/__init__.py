"""Kafka client building blocks every package shares (confluent-kafka underneath).

- :func:`read_committed`: read a whole topic with read_committed, up to the end offsets at the start.
"""

from onceflow.core.kafka.read_to_end import TopicNotFound, TopicRecord, read_committed

__all__ = ["TopicNotFound", "TopicRecord", "read_committed"]
