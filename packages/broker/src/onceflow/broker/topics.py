"""The topic registry: which topics exist, their ids, partition counts, configs and open logs.

Guarantees:
- the registry file (``data_dir/topics.json``) is replaced atomically and fsynced (file and
  directory) before a create or delete is acknowledged, so a topic a client saw created survives
  ``kill -9`` and a deleted one does not come back;
- a topic's ``topic_id`` never changes, and a re-created topic gets a new one;
- on open, every registered partition log is reopened (storage recovers torn tails);
- partition logs of a deleted topic are closed and their directories removed after the registry
  update, so a crash in between leaves only an orphan directory, which is removed on the next open;
- a create that fails (a partition that cannot be opened, a registry that cannot be written) leaves
  nothing behind: no registration, no open file, no partition directory.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from onceflow.broker.partition import Partition
from onceflow.broker.storage.config import LogConfig
from onceflow.core.fsync import replace_durably
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.topics")

REGISTRY_FILE = "topics.json"
LOGS_DIR = "logs"
MAX_TOPIC_NAME = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
"""Apache Kafka's internal topics: here the group and transaction state lives in state logs, so these
names are never created on demand (auto-creation skips them) and Metadata flags them internal."""


class TopicExists(Exception):  # noqa: N818 - Kafka's TOPIC_ALREADY_EXISTS
    """A topic of that name is already registered."""


class InvalidTopicName(Exception):  # noqa: N818 - Kafka's INVALID_TOPIC_EXCEPTION
    """A topic name Kafka would reject."""


def check_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicName` unless ``name`` is a legal Kafka topic name."""
    if not name or name in (".", ".."):
        raise InvalidTopicName(f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_NAME:
        raise InvalidTopicName(f"topic name is longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL_NAME.match(name):
        raise InvalidTopicName(f"topic name {name!r} may only contain ASCII letters, digits, '.', '_', '-'")


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """The durable description of one topic."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Topic:
    """A registered topic with its open partitions."""

    spec: TopicSpec
    log_config: LogConfig
    partitions: list[Partition]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def topic_id(self) -> uuid.UUID:
        return self.spec.topic_id


class TopicRegistry:
    """All topics of this broker (see module docs for the durability contract)."""

    def __init__(self, data_dir: Path, defaults: LogConfig) -> None:
        self._data_dir = data_dir
        self._logs_dir = data_dir / LOGS_DIR
        self._defaults = defaults
        self._topics: dict[str, Topic] = {}

    @property
    def defaults(self) -> LogConfig:
        """Log config of a topic that sets no overrides (from the broker config)."""
        return self._defaults

    def open(self) -> None:
        """Load the registry file and reopen every partition log; remove orphan log directories."""
        self._logs_dir.mkdir(parents=True, exist_ok=True)
        path = self._data_dir / REGISTRY_FILE
        specs: list[TopicSpec] = []
        if path.exists():
            raw = json.loads(path.read_text())
            specs = [
                TopicSpec(
                    name=item["name"],
                    topic_id=uuid.UUID(item["topic_id"]),
                    partitions=int(item["partitions"]),
                    configs=dict(item.get("configs", {})),
                )
                for item in raw["topics"]
            ]
        for spec in specs:
            self._topics[spec.name] = self._open_topic(spec)
        live = {self._partition_dir(t.name, p).name for t in self._topics.values() for p in range(len(t.partitions))}
        for child in self._logs_dir.iterdir():
            if child.is_dir() and child.name not in live:
                log.warning("topics.orphan_removed", dir=child)
                shutil.rmtree(child, ignore_errors=True)
        log.info("topics.opened", count=len(self._topics))

    def _partition_dir(self, topic: str, partition: int) -> Path:
        return self._logs_dir / f"{topic}-{partition}"

    def _open_topic(self, spec: TopicSpec) -> Topic:
        """Open every partition of ``spec``; if one fails, the ones already open are closed again."""
        config = LogConfig.from_topic_configs(spec.configs, self._defaults)
        partitions: list[Partition] = []
        try:
            for index in range(spec.partitions):
                partitions.append(Partition.open(self._partition_dir(spec.name, index), spec.name, index, config))
        except BaseException:
            for partition in partitions:
                partition.log.close_files()
            raise
        return Topic(spec=spec, log_config=config, partitions=partitions)

    def _persist(self) -> None:
        payload = {
            "topics": [
                {
                    "name": t.spec.name,
                    "topic_id": str(t.spec.topic_id),
                    "partitions": t.spec.partitions,
                    "configs": dict(t.spec.configs),
                }
                for t in self._topics.values()
            ]
        }
        replace_durably(self._data_dir / REGISTRY_FILE, json.dumps(payload, indent=1, sort_keys=True).encode())

    def get(self, name: str) -> Topic | None:
        """The topic called ``name``, if registered."""
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        """The topic with ``topic_id``, if registered."""
        return next((t for t in self._topics.values() if t.topic_id == topic_id), None)

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self._topics.values()))

    def validate(self, name: str, partitions: int, configs: Mapping[str, str]) -> LogConfig:
        """Check a would-be topic; raises TopicExists, InvalidTopicName, ValueError or InvalidTopicConfig."""
        check_topic_name(name)
        if name in self._topics:
            raise TopicExists(f"topic {name!r} already exists")
        if partitions < 1:
            raise ValueError(f"number of partitions must be at least 1, got {partitions}")
        return LogConfig.from_topic_configs(configs, self._defaults)

    def create(self, name: str, partitions: int, configs: Mapping[str, str]) -> Topic:
        """Register and open a new topic; durable when this returns (errors as :meth:`validate`)."""
        self.validate(name, partitions, configs)
        spec = TopicSpec(name=name, topic_id=uuid.uuid4(), partitions=partitions, configs=dict(configs))
        self._remove_partition_dirs(name, partitions)
        try:
            topic = self._open_topic(spec)
        except BaseException as exc:
            self._remove_partition_dirs(name, partitions)
            log.warning("topic.create_failed", topic=name, reason=exc)
            raise
        self._topics[name] = topic
        try:
            self._persist()
        except BaseException as exc:
            # Step back to before the call: not registered, no open files, no directories.
            del self._topics[name]
            for partition in topic.partitions:
                partition.log.close_files()
            self._remove_partition_dirs(name, partitions)
            log.warning("topic.create_failed", topic=name, reason=exc)
            raise
        log.info("topic.created", topic=name, partitions=partitions, topic_id=spec.topic_id)
        return topic

    def add_partitions(self, name: str, total: int) -> Topic:
        """Grow ``name`` to ``total`` partitions (CreatePartitions); durable when this returns.

        Raises KeyError for an unknown topic and ValueError unless ``total`` exceeds the current count.
        A failure leaves the topic as it was (no new partition open, no new directory).
        """
        topic = self._topics[name]
        current = len(topic.partitions)
        if total <= current:
            raise ValueError(f"Topic currently has {current} partitions, which is higher than the requested {total}.")
        added: list[Partition] = []
        try:
            for index in range(current, total):
                directory = self._partition_dir(name, index)
                shutil.rmtree(directory, ignore_errors=True)
                added.append(Partition.open(directory, name, index, topic.log_config))
            old_spec = topic.spec
            topic.spec = TopicSpec(old_spec.name, old_spec.topic_id, total, old_spec.configs)
            topic.partitions.extend(added)
            try:
                self._persist()
            except BaseException:
                topic.spec = old_spec
                del topic.partitions[current:]
                raise
        except BaseException as exc:
            for partition in added:
                partition.log.close_files()
            for index in range(current, total):
                shutil.rmtree(self._partition_dir(name, index), ignore_errors=True)
            log.warning("topic.add_partitions_failed", topic=name, reason=exc)
            raise
        log.info("topic.partitions_added", topic=name, partitions=total, was=current)
        return topic

    def alter_configs(self, name: str, configs: Mapping[str, str]) -> Topic:
        """Replace the topic config overrides of ``name`` (AlterConfigs); durable when this returns and
        applied to every open partition log. Raises KeyError or InvalidTopicConfig (nothing changed)."""
        topic = self._topics[name]
        log_config = LogConfig.from_topic_configs(configs, self._defaults)
        old_spec = topic.spec
        topic.spec = TopicSpec(old_spec.name, old_spec.topic_id, old_spec.partitions, dict(configs))
        try:
            self._persist()
        except BaseException:
            topic.spec = old_spec
            raise
        topic.log_config = log_config
        for partition in topic.partitions:
            partition.log.update_config(log_config)
        log.info("topic.configs_altered", topic=name, configs=dict(configs), was=dict(old_spec.configs))
        return topic

    def _remove_partition_dirs(self, name: str, partitions: int) -> None:
        for index in range(partitions):
            shutil.rmtree(self._partition_dir(name, index), ignore_errors=True)

    def delete(self, name: str) -> Topic | None:
        """Unregister ``name`` (durably), then close and remove its logs. Returns the removed topic."""
        topic = self._topics.pop(name, None)
        if topic is None:
            return None
        try:
            self._persist()
        except BaseException:
            self._topics[name] = topic  # still registered on disk, so still served
            raise
        for partition in topic.partitions:
            partition.delete()
        log.info("topic.deleted", topic=name, topic_id=topic.topic_id)
        return topic

    def close(self) -> None:
        """Close (snapshot, fsync) every partition log; one failure does not stop the others."""
        for topic in self._topics.values():
            for partition in topic.partitions:
                try:
                    partition.close()
                except Exception:
                    log.exception("partition.close_failed", topic=topic.name, partition=partition.index)
