"""Kafka client building blocks every package shares (confluent-kafka underneath).

- :func:`read_to_end` / :func:`read_committed`: read a topic up to the end offsets captured at the start
  (Kafka Connect's ``KafkaBasedLog.readToEnd``), through a leader that moves; :func:`end_offsets`;
- :data:`FETCH_DEFAULTS` and :func:`with_fetch_defaults` (a stream consumer's fetch settings),
  :func:`reader_config`, :func:`idempotent_producer_config`, :func:`transactional_producer_config`: the client
  configurations of onceflow's roles, on a base configuration (``KafkaSettings.client_config``);
- :func:`produce`: produce with back-pressure (a full local queue waits, it does not fail), and
  :func:`produce_all` for a batch of records in one call, :func:`produce_acknowledged` for records
  that must land (a refusal raises, naming the topic and key);
- :func:`is_fenced` / :func:`raise_if_fenced`: fencing errors as one exception, ``ProducerFenced``;
- :func:`ensure_topics`: create missing topics (an existing one is fine) with the cluster's
  :class:`Replication` (default ``min(3, brokers)`` replicas, min ISR 2 from 3 on), returning once the
  brokers serve them (:func:`await_served`);
- :func:`is_transient` / :func:`retry_transient`: the one list of transient errors (a broker, leader or
  coordinator away or moving) and the one retry loop through them, as Kafka's own clients retry;
  :class:`KafkaUnavailable` once its deadline passed;
- :func:`watermark_offsets` and :func:`retry_admin`: partition offsets and AdminClient calls, which
  librdkafka sends to a leader or controller that may have died (:mod:`~onceflow.core.kafka.routed`).
"""

from onceflow.core.kafka.config import (
    FETCH_DEFAULTS,
    IsolationLevel,
    idempotent_producer_config,
    reader_config,
    transactional_producer_config,
    with_fetch_defaults,
)
from onceflow.core.kafka.producer import (
    FENCED_CODES,
    flush_acknowledged,
    is_fenced,
    produce,
    produce_acknowledged,
    produce_all,
    raise_if_fenced,
)
from onceflow.core.kafka.read_to_end import (
    READ_GROUP_PREFIX,
    TopicNotFound,
    TopicRecord,
    Until,
    end_offsets,
    partition_offsets,
    position_after,
    read_committed,
    read_to_end,
)
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
from onceflow.core.kafka.topics import DEFAULT_REPLICATION, Replication, TopicSpec, await_served, ensure_topics

__all__ = [
    "DEFAULT_REPLICATION",
    "DEFAULT_RETRY",
    "FENCED_CODES",
    "FETCH_DEFAULTS",
    "READ_GROUP_PREFIX",
    "TRANSIENT_CODES",
    "IsolationLevel",
    "KafkaUnavailable",
    "Replication",
    "RetryPolicy",
    "TopicNotFound",
    "TopicRecord",
    "TopicSpec",
    "Until",
    "await_served",
    "end_offsets",
    "ensure_topics",
    "flush_acknowledged",
    "idempotent_producer_config",
    "is_fenced",
    "is_transient",
    "kafka_error",
    "partition_offsets",
    "position_after",
    "produce",
    "produce_acknowledged",
    "produce_all",
    "raise_if_fenced",
    "read_committed",
    "read_to_end",
    "reader_config",
    "retry_admin",
    "retry_transient",
    "transactional_producer_config",
    "watermark_offsets",
    "with_fetch_defaults",
]
