"""The Kafka topic under the transaction log: created only when asked, verified at start, watched on every append.

Guarantees:

- :meth:`LogTopic.ensure` never creates a missing topic unless told to (``create=True``: ``onceflow
  txn init-log``, ``onceflow txn rebuild``, or a disposable setup's ``init_if_missing``); a missing
  topic is :class:`LogTopicMissing`. It creates one with one partition, ``cleanup.policy=compact``
  and no time or size retention (``retention.ms=-1``, ``retention.bytes=-1``).
- It refuses an existing topic whose configuration could delete or lose decisions
  (:class:`LogTopicMisconfigured`): any ``cleanup.policy`` other than exactly ``compact``
  (``delete`` or ``compact,delete`` drop records by age or size), a bounded ``retention.ms`` or
  ``retention.bytes`` (one ``cleanup.policy`` change away from deleting undecided transactions:
  Kafka applies retention as soon as the policy includes ``delete``), and
  ``unclean.leader.election.enable=true`` (an out-of-sync replica taking over truncates the log).
- :meth:`LogTopic.check` raises :class:`LogTopicLost` when the topic is gone or is not the topic that
  was opened (a deleted and re-created topic gets a new topic id), so a coordinator never writes its
  decisions into a topic that lost the earlier ones, and notices a deletion at its next write.
- :meth:`LogTopic.start_offset` is the partition's log start offset: above 0, records were deleted
  from its head (``kafka-delete-records``, or retention before the policy was fixed).
- A topic it creates gets the cluster's :class:`~onceflow.core.kafka.Replication` (replication
  factor ``min(3, brokers)`` and min ISR 2 unless configured), and every admin call is retried
  through transient errors (a broker down, a leader moving) within the timeout, so a broker's death
  is not mistaken for a lost or unreadable log.
"""

from __future__ import annotations

from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec

from onceflow.coordinator.exceptions import TransactionLogError
from onceflow.coordinator.log.refusals import LogTopicLost, LogTopicMisconfigured, LogTopicMissing
from onceflow.core.kafka import (
    DEFAULT_REPLICATION,
    Replication,
    RetryPolicy,
    TopicSpec,
    ensure_topics,
    is_transient,
    retry_admin,
)
from onceflow.core.logging import get_logger

__all__ = ["LOG_TOPIC_CONFIG", "LogTopic", "LogTopicLost", "LogTopicMisconfigured", "LogTopicMissing"]

#: The configuration the coordinator creates its log topic with.
LOG_TOPIC_CONFIG: Final = {"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1"}
_UNBOUNDED_RETENTION: Final = ("retention.ms", "retention.bytes")

_log = get_logger(__name__)


def _error_code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _transient_or_unknown_topic(exc: BaseException) -> bool:
    return is_transient(exc) or (
        isinstance(exc, KafkaException) and _error_code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART
    )


class LogTopic:
    """The log topic ``name``: creation, configuration check and identity (its topic id)."""

    def __init__(
        self, config: dict[str, Any], name: str, *, replication: Replication = DEFAULT_REPLICATION, timeout: float
    ) -> None:
        self.name = name
        self._config = config
        self._admin = AdminClient(config)
        self._replication = replication
        self._timeout = timeout
        self._retry = RetryPolicy(timeout_s=timeout)
        self.topic_id: str | None = None

    def ensure(self, *, create: bool = False) -> str:
        """Refuse a missing (unless ``create``) or misconfigured topic; remember and return its topic id.

        Steps:
            1. A missing topic is :class:`LogTopicMissing`; with ``create`` it is created (one
               partition, :data:`LOG_TOPIC_CONFIG`; TOPIC_ALREADY_EXISTS is fine).
            2. Describe its configuration: compact only, unbounded retention, no unclean election. The
               topic exists (step 1 saw or made it), so UNKNOWN_TOPIC_OR_PART here is a broker that
               has not caught up with the cluster metadata yet: retried like a transient error.
            3. Remember its topic id: :meth:`check` compares against it.
        """
        # Step 1
        if self._describe_id() is None:
            if not create:
                raise LogTopicMissing(self.name)
            self._create()
        # Step 2
        self._verify_config()
        # Step 3
        self.topic_id = self._describe_id()
        if self.topic_id is None:
            raise LogTopicLost(f"log topic {self.name} vanished while the coordinator opened it")
        return self.topic_id

    def _create(self) -> None:
        spec = TopicSpec(self.name, 1, LOG_TOPIC_CONFIG)
        try:
            if ensure_topics(self._config, [spec], replication=self._replication, timeout=self._timeout):
                _log.info("txnlog.topic_created", topic=self.name)
        except KafkaException as exc:
            raise TransactionLogError(f"cannot create log topic {self.name}: {exc}") from None

    def _verify_config(self) -> None:
        resource = ConfigResource(ConfigResource.Type.TOPIC, self.name)
        try:
            entries = retry_admin(
                self._admin,
                lambda t: self._admin.describe_configs([resource], request_timeout=t)[resource].result(t + 1),
                what=f"configuration of {self.name}",
                policy=self._retry,
                transient=_transient_or_unknown_topic,
            )
        except KafkaException as exc:
            raise TransactionLogError(f"cannot describe the configuration of log topic {self.name}: {exc}") from None
        entry = entries.get("cleanup.policy")
        policy = entry.value if entry is not None and entry.value is not None else "delete"
        if policy.replace(" ", "") != "compact":
            raise LogTopicMisconfigured(
                self.name,
                "cleanup.policy",
                policy,
                "the coordinator log must be compacted only (cleanup.policy=compact); a delete policy drops "
                "decisions by age or size. Fix the topic (kafka-configs --alter --add-config "
                "cleanup.policy=compact) or point transaction_log.topic at another one",
            )
        for name in _UNBOUNDED_RETENTION:
            entry = entries.get(name)
            if entry is not None and entry.value is not None and entry.value.strip() != "-1":
                raise LogTopicMisconfigured(
                    self.name,
                    name,
                    entry.value,
                    "the coordinator log needs unbounded retention (-1): a bounded one deletes undecided "
                    "transactions as soon as the cleanup policy includes delete. Fix the topic "
                    f"(kafka-configs --alter --add-config {name}=-1)",
                )
        entry = entries.get("unclean.leader.election.enable")
        if entry is not None and (entry.value or "").strip().lower() == "true":
            raise LogTopicMisconfigured(
                self.name,
                "unclean.leader.election.enable",
                "true",
                "an out-of-sync replica may become leader and truncate the decisions it lacks. Fix the topic "
                "(kafka-configs --alter --add-config unclean.leader.election.enable=false)",
            )

    def start_offset(self) -> int:
        """The partition's log start offset (0 unless records were deleted from its head)."""
        partition = TopicPartition(self.name, 0)

        def earliest(timeout: float) -> int:
            spec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
            offsets = self._admin.list_offsets({partition: spec}, request_timeout=timeout)
            return int(offsets[partition].result(timeout + 1).offset)

        try:
            return retry_admin(self._admin, earliest, what=f"start offset of {self.name}", policy=self._retry)
        except KafkaException as exc:
            raise TransactionLogError(f"cannot read the start offset of log topic {self.name}: {exc}") from None

    def exists(self) -> bool:
        return self._describe_id() is not None

    def _describe_id(self) -> str | None:
        """The topic's id, or None when it does not exist."""

        def describe(timeout: float) -> str:
            future = self._admin.describe_topics(TopicCollection([self.name]), request_timeout=timeout)[self.name]
            return str(future.result(timeout + 1).topic_id)

        try:
            return retry_admin(self._admin, describe, what=f"topic id of {self.name}", policy=self._retry)
        except KafkaException as exc:
            if _error_code(exc) in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                return None
            raise TransactionLogError(f"cannot describe log topic {self.name}: {exc}") from None

    def check(self, when: str) -> None:
        """Raise :class:`LogTopicLost` unless the topic is still the one :meth:`ensure` opened."""
        current = self._describe_id()
        if current == self.topic_id:
            return
        if current is None:
            detail = f"log topic {self.name} was deleted ({when}); the decisions it held are gone"
        else:
            detail = (
                f"log topic {self.name} was re-created ({when}): topic id {self.topic_id} became {current}, "
                "so the decisions it held are gone"
            )
        _log.error("txnlog.topic_lost", topic=self.name, when=when, topic_id=self.topic_id, current=current)
        raise LogTopicLost(f"{detail}; stopping rather than logging decisions into a log that lost the earlier ones")
