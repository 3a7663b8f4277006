"""Kafka client building blocks every package shares (confluent-kafka underneath).

- :func:`read_committed`: read a whole topic with read_committed, up to the end offsets at the start;
- :func:`produce`: produce with back-pressure (a full local queue waits, it does not fail);
- :func:`is_fenced` / :func:`raise_if_fenced`: fencing errors as one exception, ``ProducerFenced``;
- :func:`ensure_topics`: create missing topics (an existing one is fine).
"""

from onceflow.core.kafka.producer import FENCED_CODES, is_fenced, produce, raise_if_fenced
from onceflow.core.kafka.read_to_end import TopicNotFound, TopicRecord, read_committed
from onceflow.core.kafka.topics import ensure_topics

__all__ = [
    "FENCED_CODES",
    "TopicNotFound",
    "TopicRecord",
    "ensure_topics",
    "is_fenced",
    "produce",
    "raise_if_fenced",
    "read_committed",
]
