"""Creating the topics a component needs, when they are missing, replicated as the cluster allows.

Every topic onceflow creates (its internal ``_onceflow_*`` topics: the coordinator's decision log,
Connect's configs, offsets and status, the Kafka sink's commits, the schemas; and the data topics a
sink or the demo creates) is created here, with one :class:`Replication`: a replication factor
(default ``min(3, brokers in the cluster)``) and ``min.insync.replicas`` (default 2 when the factor is
3 or more, else 1), as Kafka Connect creates its internal topics (``*.storage.replication.factor``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from onceflow.core.errors import InvalidConfig
from onceflow.core.kafka.retry import RetryPolicy, retry_transient
from onceflow.core.kafka.routed import retry_admin
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings

#: The largest default replication factor (Kafka's usual production setting).
MAX_DEFAULT_FACTOR: Final = 3
#: Where the settings live in every service's configuration.
FACTOR_SETTING: Final = "kafka.replication_factor"
MIN_ISR_SETTING: Final = "kafka.min_insync_replicas"

_log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic to create: its name, partition count and topic configs (``cleanup.policy``, ...)."""

    name: str
    partitions: int = 1
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Replication:
    """Replication factor and ``min.insync.replicas`` of the topics created (None: the defaults above).

    ``factor_setting`` / ``min_isr_setting`` name the settings in errors.
    """

    factor: int | None = None
    min_insync_replicas: int | None = None
    factor_setting: str = FACTOR_SETTING
    min_isr_setting: str = MIN_ISR_SETTING

    @classmethod
    def of(cls, kafka: KafkaSettings) -> Replication:
        """The replication ``kafka.replication_factor`` and ``kafka.min_insync_replicas`` ask for."""
        return cls(kafka.replication_factor, kafka.min_insync_replicas)

    def resolve(self, brokers: int) -> tuple[int, int]:
        """``(replication factor, min.insync.replicas)`` on a cluster of ``brokers`` live brokers.

        Raises :class:`InvalidConfig` naming the setting for a factor below 1 or above ``brokers``,
        or a min ISR below 1 or above the factor.
        """
        factor = self.factor if self.factor is not None else max(1, min(MAX_DEFAULT_FACTOR, brokers))
        if factor < 1:
            raise InvalidConfig(self.factor_setting, f"must be at least 1, got {factor}")
        if factor > brokers:
            raise InvalidConfig(
                self.factor_setting,
                f"{factor} is more than the {brokers} broker(s) the cluster has up; a topic cannot have more "
                "replicas than brokers",
            )
        min_isr = self.min_insync_replicas if self.min_insync_replicas is not None else (2 if factor >= 3 else 1)
        if not 1 <= min_isr <= factor:
            reason = f"must be between 1 and the replication factor {factor}, got {min_isr}"
            raise InvalidConfig(self.min_isr_setting, reason)
        return factor, min_isr


#: The default: ``min(3, brokers)`` replicas, min ISR 2 from 3 replicas on.
DEFAULT_REPLICATION: Final = Replication()


def ensure_topics(
    client_config: Mapping[str, Any],
    topics: Sequence[TopicSpec],
    *,
    replication: Replication = DEFAULT_REPLICATION,
    timeout: float = 30.0,
) -> list[str]:
    """Create every topic of ``topics`` that does not exist yet; return the names created here.

    Steps:
        1. List the cluster's topics and brokers (without naming topics, which could auto-create
           them): a user allowed to describe but not to create topics can still start on existing
           ones. Transient errors (a broker down, a leader moving) are retried until ``timeout``.
        2. Nothing missing: done (an existing topic is left as it is, whatever its replication).
        3. Resolve the replication on the live brokers (a bad setting is :class:`InvalidConfig`).
        4. Create the missing ones with that replication factor and ``min.insync.replicas`` (a
           topic's own ``min.insync.replicas`` in its spec wins). One that a concurrent caller created
           first is left as it is; a transient failure is retried (:func:`retry_admin`: librdkafka
           sends CreateTopics to a controller that may have died); any other failure raises a
           KafkaException naming the topic.
        5. Wait until the brokers serve what was created: every created topic in the cluster
           metadata with a leader for each partition. CreateTopics answers once the controller has
           committed the topic; brokers learn of it a moment later, and until then a DescribeConfigs,
           produce or fetch for it is UNKNOWN_TOPIC_OR_PART (Kafka's own test utilities wait the same
           way after creating a topic).
    """
    admin = AdminClient(dict(client_config))
    policy = RetryPolicy(timeout_s=timeout)
    # Step 1
    metadata = retry_transient(lambda: admin.list_topics(timeout=timeout), what="list topics", policy=policy)
    existing = metadata.topics
    missing = [t for t in topics if t.name not in existing or existing[t.name].error is not None]
    # Step 2
    if not missing:
        return []
    # Step 3
    factor, min_isr = replication.resolve(len(metadata.brokers))
    # Step 4
    created: list[str] = []
    for spec in missing:
        config = {"min.insync.replicas": str(min_isr), **spec.config}
        new = NewTopic(spec.name, spec.partitions, factor, config=config)
        if retry_admin(admin, functools.partial(_create, admin, new), what=f"create {spec.name}", policy=policy):
            created.append(spec.name)
            _log.info("topic.created", topic=spec.name, partitions=spec.partitions, replication_factor=factor,
                      min_insync_replicas=config["min.insync.replicas"])  # fmt: skip
    # Step 5
    if created:
        await_served(admin, created, timeout=timeout)
    return created


def await_served(admin: AdminClient, names: Sequence[str], *, timeout: float = 30.0) -> None:
    """Return once the cluster metadata has each of ``names`` with a leader for every partition: a
    topic just created is then known to the brokers. Until ``timeout``, else :class:`KafkaUnavailable`
    naming the first topic not served yet."""

    def served() -> None:
        topics = admin.list_topics(timeout=timeout).topics
        for name in names:
            topic = topics.get(name)
            if topic is None or topic.error is not None or any(p.leader < 0 for p in topic.partitions.values()):
                raise KafkaException(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, f"topic {name} is not served yet"))

    retry_transient(served, what=f"metadata of {', '.join(names)}", policy=RetryPolicy(timeout_s=timeout))


def _create(admin: AdminClient, topic: NewTopic, timeout: float) -> bool:
    """Create ``topic``; False when it exists already. Errors keep their code, the message names the topic."""
    future = admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)[topic.topic]
    try:
        future.result(timeout + 1)
        return True
    except KafkaException as exc:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        code = error.code() if error is not None else KafkaError._FAIL
        raise KafkaException(KafkaError(code, f"cannot create topic {topic.topic}: {exc}")) from exc
