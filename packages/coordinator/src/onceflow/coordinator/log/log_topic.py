"""The Kafka topic under the transaction log: created compacted, verified at start, watched on every append.

Guarantees:

- :meth:`LogTopic.ensure` creates a missing topic with one partition, ``cleanup.policy=compact`` and
  no time or size retention (``retention.ms=-1``, ``retention.bytes=-1``), then refuses an existing
  topic whose configuration would let the broker delete decisions: any ``cleanup.policy`` other than
  exactly ``compact`` (``delete`` or ``compact,delete`` drop records by age or size). On a
  compact-only topic Kafka never applies ``retention.ms``/``retention.bytes``, so they are not
  refused there; the coordinator creates its topic with both at -1 anyway, so flipping the policy
  later deletes nothing either.
- :meth:`LogTopic.check` raises :class:`LogTopicLost` when the topic is gone or is not the topic that
  was opened (a deleted and re-created topic gets a new topic id), so a coordinator never writes its
  decisions into a topic that lost the earlier ones, and notices a deletion at its next write.
"""

from __future__ import annotations

from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from onceflow.coordinator.exceptions import TransactionLogError
from onceflow.core.kafka import ensure_topics
from onceflow.core.logging import get_logger

#: The configuration the coordinator creates its log topic with.
LOG_TOPIC_CONFIG: Final = {"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1"}

_log = get_logger(__name__)


class LogTopicMisconfigured(TransactionLogError):  # noqa: N818 - reads as a state
    """The log topic exists with a setting that would let the broker delete decisions."""

    def __init__(self, topic: str, setting: str, value: str, reason: str) -> None:
        self.topic = topic
        self.setting = setting
        super().__init__(f"log topic {topic} has {setting}={value}: {reason}")


class LogTopicLost(TransactionLogError):  # noqa: N818 - reads as a state
    """The log topic was deleted, or deleted and re-created, under a running coordinator."""


def _error_code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


class LogTopic:
    """The log topic ``name``: creation, configuration check and identity (its topic id)."""

    def __init__(self, config: dict[str, Any], name: str, *, replication_factor: int, timeout: float) -> None:
        self.name = name
        self._config = config
        self._admin = AdminClient(config)
        self._replication_factor = replication_factor
        self._timeout = timeout
        self.topic_id: str | None = None

    def ensure(self) -> str:
        """Create the topic if missing, refuse a misconfigured one; remember and return its topic id.

        Steps:
            1. Create it (one partition, :data:`LOG_TOPIC_CONFIG`); TOPIC_ALREADY_EXISTS is fine.
            2. Describe its configuration: ``cleanup.policy`` must be exactly ``compact``.
            3. Remember its topic id: :meth:`check` compares against it.
        """
        # Step 1
        spec = NewTopic(self.name, 1, self._replication_factor, config=dict(LOG_TOPIC_CONFIG))
        try:
            if ensure_topics(self._config, [spec], timeout=self._timeout):
                _log.info("txnlog.topic_created", topic=self.name)
        except KafkaException as exc:
            raise TransactionLogError(f"cannot create log topic {self.name}: {exc}") from None
        # Step 2
        self._verify_config()
        # Step 3
        self.topic_id = self._describe_id()
        if self.topic_id is None:
            raise LogTopicLost(f"log topic {self.name} vanished while the coordinator opened it")
        return self.topic_id

    def _verify_config(self) -> None:
        resource = ConfigResource(ConfigResource.Type.TOPIC, self.name)
        try:
            entries = self._admin.describe_configs([resource])[resource].result(self._timeout)
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

    def _describe_id(self) -> str | None:
        """The topic's id, or None when it does not exist."""
        future = self._admin.describe_topics(TopicCollection([self.name]), request_timeout=self._timeout)[self.name]
        try:
            return str(future.result(self._timeout).topic_id)
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
