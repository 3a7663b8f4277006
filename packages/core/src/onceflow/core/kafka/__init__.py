"""Kafka client building blocks every package shares (confluent-kafka underneath).

- :func:`read_committed`: read a whole topic with read_committed, up to the end offsets at the start;
- :func:`produce`: produce with back-pressure (a full local queue waits, it does not fail);
- :func:`is_fenced` / :func:`raise_if_fenced`: fencing errors as one exception, ``ProducerFenced``;
- :func:`ensure_topics`: create missing topics (an existing one is fine) with the cluster's
  :class:`Replication` (default ``min(3, brokers)`` replicas, min ISR 2 from 3 on);
- :func:`is_transient` / :func:`retry_transient`: the one list of transient errors (a broker, leader or
  coordinator away or moving) and the one retry loop through them, as Kafka's own clients retry;
  :class:`KafkaUnavailable` once its deadline passed;
- :func:`watermark_offsets` and :func:`retry_admin`: partition offsets and AdminClient calls, which
  librdkafka sends to a leader or controller that may have died (:mod:`~onceflow.core.kafka.routed`).
"""

from onceflow.core.kafka.producer import FENCED_CODES, is_fenced, produce, raise_if_fenced
from onceflow.core.kafka.read_to_end import TopicNotFound, TopicRecord, read_committed
from onceflow.core.kafka.retry import (
    DEFAULT_RETRY,
    TRANSIENT_CODES,
    KafkaUnavailable,
    RetryPolicy,
    is_transient,
    kafka_error,
    retry_transient,
)
from onceflow.core.kafka.routed import retry_admin, watermark_offsets
from onceflow.core.kafka.topics import DEFAULT_REPLICATION, Replication, TopicSpec, ensure_topics

__all__ = [
    "DEFAULT_REPLICATION",
    "DEFAULT_RETRY",
    "FENCED_CODES",
    "TRANSIENT_CODES",
    "KafkaUnavailable",
    "Replication",
    "RetryPolicy",
    "TopicNotFound",
    "TopicRecord",
    "TopicSpec",
    "ensure_topics",
    "is_fenced",
    "is_transient",
    "kafka_error",
    "produce",
    "raise_if_fenced",
    "read_committed",
    "retry_admin",
    "retry_transient",
    "watermark_offsets",
]
