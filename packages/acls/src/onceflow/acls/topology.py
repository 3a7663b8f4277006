"""What each onceflow service touches in Kafka, read from the services' own settings.

Every name comes from the service's settings class: its defaults, or the config file the operator
passes (``--config coordinator=coordinator.toml``; the environment of the machine running the
command is not read, it is not the service's, unless ``--service-env`` says it is: a deploy job that
sets the services' own variables). Transactional-id prefixes come from the
functions that name the producers (the Kafka sink's ``transactional_id``, the source tasks'
``transactional_id``), the connectors' output topics from the registered connectors' config
definitions. Services that run as several processes under one principal take one file each: the
shards of a participant (each its own transactional-id prefix), the Spark jobs (each its own source
and dead-letter topic).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TypeVar

from onceflow.consumer.settings import ConsumerSettings
from onceflow.contract.shards import WHOLE_SINK, Shard
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import Settings, load_settings
from onceflow.core.topics import SCHEMAS_TOPIC
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.worker.exactly_once import transactional_id as source_transactional_id
from onceflow.sinks.kafka.participant import KafkaParticipant
from onceflow.sinks.server.settings import KafkaOptions, KafkaSink, ParticipantSettings
from onceflow.spark.job.settings import SparkJobSettings

SERVICES = ("coordinator", "connect", "participant", "consumer", "spark")
"""The services that talk to Kafka, by the names ``--principal-map`` and ``--config`` use."""

MANY_CONFIGS = ("participant", "spark")
"""The services that may run as several processes, one config file each (shards, jobs)."""

S = TypeVar("S", bound=Settings)


def common_prefix(name: Callable[[str], str]) -> str:
    """The part every name ``name(x)`` shares, whatever ``x`` is (what a prefixed ACL must cover)."""
    return os.path.commonprefix([name("a"), name("b")])  # noqa: RUF071 - a string prefix is what is wanted


@dataclass(frozen=True)
class KafkaSinkNames:
    """One Kafka sink of the participant: its topic, its commit markers, its producers' prefix."""

    topic: str
    commits_topic: str
    transactional_id_prefix: str


@dataclass(frozen=True)
class Topology:
    """The settings of every service (see module docs)."""

    coordinator: CoordinatorSettings
    connect: WorkerSettings
    participant_sinks: tuple[KafkaSinkNames, ...]
    consumer: ConsumerSettings
    spark_jobs: tuple[SparkJobSettings, ...]

    @classmethod
    def load(cls, configs: Mapping[str, Path | Sequence[Path]], *, env: Mapping[str, str] | None = None) -> Topology:
        """Each service's settings from its config file(s) in ``configs`` (by service name), else its
        defaults; ``env``, when given, holds the services' ``ONCEFLOW_<SERVICE>__...`` overrides (a
        deploy job that sets them as the services' containers do). A service name that is not one of
        :data:`SERVICES`, or several files for a service not in :data:`MANY_CONFIGS`, is an
        ``InvalidConfig``."""
        overrides = dict(env or {})
        paths = {name: [value] if isinstance(value, Path) else list(value) for name, value in configs.items()}
        unknown = sorted(set(paths) - set(SERVICES))
        if unknown:
            raise InvalidConfig("--config", f"unknown service {', '.join(unknown)}; known: {', '.join(SERVICES)}")
        for name, files in paths.items():
            if len(files) > 1 and name not in MANY_CONFIGS:
                raise InvalidConfig("--config", f"{name} runs with one config file, got {len(files)}")

        def each(name: str, model: type[S]) -> list[S]:
            loaded = [load_settings(model, path, env=overrides) for path in paths.get(name, [])]
            return loaded or [model.model_construct()]

        participants = [load_settings(ParticipantSettings, p, env=overrides) for p in paths.get("participant", [])]
        return cls(
            coordinator=each("coordinator", CoordinatorSettings)[0],
            connect=each("connect", WorkerSettings)[0],
            participant_sinks=_kafka_sinks(participants),
            consumer=each("consumer", ConsumerSettings)[0],
            spark_jobs=tuple(each("spark", SparkJobSettings)),
        )

    def source_transactional_id_prefix(self) -> str:
        """What every exactly-once source task's transactional id starts with."""
        return common_prefix(lambda connector: source_transactional_id(connector, 0))

    def connector_output_topics(self) -> list[str]:
        """The default output topics of the connectors a worker would run (``topic``, ``*.topic``)."""
        found: list[str] = []
        for plugin in PluginRegistry.discover().plugins():
            config_def = plugin.connector_class.config_def()
            for key in config_def.keys():  # noqa: SIM118 - ConfigDef.keys() is its list of ConfigKeys
                if key.name.endswith("topic") and isinstance(key.default, str) and key.default not in found:
                    found.append(key.default)
        return found

    def schemas_topic(self) -> str:
        """The topic of the Avro writer schemas (the Kafka sinks write it, readers read it)."""
        return SCHEMAS_TOPIC


def _kafka_sinks(participants: Sequence[ParticipantSettings]) -> tuple[KafkaSinkNames, ...]:
    """The Kafka sinks of every participant process (each shard its own prefix); without a config
    file, one with the Kafka sink's defaults and any sink name (the producers' prefix then covers
    every Kafka sink)."""

    def prefix(sink: KafkaSink | None) -> str:
        if sink is None:
            return common_prefix(lambda name: KafkaParticipant.transactional_id(_named(name, WHOLE_SINK), "job"))  # type: ignore[arg-type]
        return common_prefix(lambda job: KafkaParticipant.transactional_id(_named(sink.name, sink.shard_spec), job))  # type: ignore[arg-type]

    if not participants:
        fields = KafkaOptions.model_fields
        return (KafkaSinkNames(str(fields["topic"].default), str(fields["commits_topic"].default), prefix(None)),)
    found = (
        KafkaSinkNames(sink.options.topic, sink.options.commits_topic, prefix(sink))
        for settings in participants
        for sink in settings.sinks
        if isinstance(sink, KafkaSink)
    )
    return tuple(dict.fromkeys(found))


def _named(name: str, shard: Shard) -> SimpleNamespace:
    """What ``KafkaParticipant.transactional_id`` reads of its participant: the sink's name, its shard
    and the name its records carry (``<sink>`` or ``<sink>#<index>``, as the participant computes it)."""
    return SimpleNamespace(name=name, shard=shard, record_name=shard.record_name(name))
