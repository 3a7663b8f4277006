"""Checks that hold for both deploys: topics, wiring between the services, connectors and the audit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from onceflow.core import topics
from onceflow.ipcount.generator import generator_config_def
from onceflow.runtime.config.worker_settings import ASSIGNMENT_TOPIC
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.worker.worker import connector_config_def
from onceflow.sinks.server.settings import KafkaSink

from .deploy_support import Deploy

#: Every topic onceflow uses, by the code's names.
EXPECTED_TOPICS = {
    topics.SOURCE_TOPIC,
    topics.SINK_TOPIC,
    topics.DEAD_LETTER_TOPIC,
    topics.COORDINATOR_LOG_TOPIC,
    topics.SINK_COMMITS_TOPIC,
    topics.CONNECT_CONFIGS_TOPIC,
    topics.CONNECT_OFFSETS_TOPIC,
    topics.CONNECT_STATUS_TOPIC,
    ASSIGNMENT_TOPIC,
}
#: Generator settings that do not change which events it produces.
NOT_TRAFFIC = {"topic", "seed", "count", "rate", "batch.size"}
#: A created topic: partitions and configs.
TopicSpec = tuple[int, dict[str, str]]


def used_topics(deploy: Deploy) -> Iterator[tuple[str, bool]]:
    """(topic, compacted?) for every topic the services' settings name."""
    yield deploy.coordinator.transaction_log.topic, True
    for sink in deploy.participant.sinks:
        if isinstance(sink, KafkaSink):
            yield sink.options.topic, False
            yield sink.options.commits_topic, True
    yield deploy.spark.source.topic, False
    yield deploy.spark.dead_letter_topic, False
    yield deploy.consumer.consumer.topic, False
    connect = deploy.connect.topics
    yield from ((connect.configs, True), (connect.offsets, True), (connect.status, True), (connect.assignment, False))


def check_topics(created: Mapping[str, TopicSpec], deploy: Deploy) -> None:
    assert set(created) == EXPECTED_TOPICS
    for topic, compacted in used_topics(deploy):
        assert topic in created, f"{topic} is used but not created"
        policy = created[topic][1].get("cleanup.policy", "delete")
        assert (policy == "compact") == compacted, f"{topic}: cleanup.policy {policy}"
    connect = deploy.connect.topics
    assert created[connect.offsets][0] == connect.offsets_partitions
    assert created[connect.status][0] == connect.status_partitions
    assert created[connect.assignment][0] == deploy.connect.task_slots


def check_wiring(deploy: Deploy, coordinator_host: str, participant_host: str) -> None:
    """The Spark driver and the participant reach the coordinator's server; the driver finds every
    sink of the participant at the participant's server."""
    target = f"{coordinator_host}:{deploy.coordinator.server.port}"
    assert deploy.spark.coordinator.target == deploy.participant.coordinator.target == target
    assert {p.sink for p in deploy.spark.participants} == {s.name for s in deploy.participant.sinks}
    for participant in deploy.spark.participants:
        assert participant.target == f"{participant_host}:{deploy.participant.server.port}"


def check_connector(config: Mapping[str, str]) -> None:
    """A connector config the worker accepts: a known plugin, known keys, valid values."""
    plugin = PluginRegistry.discover().lookup(config["connector.class"])
    definition = connector_config_def(plugin.connector_class)
    unknown = {key for key in config if key not in definition and not key.startswith("producer.override.")}
    assert not unknown, f"unknown connector settings: {sorted(unknown)}"
    definition.parse(config)


def traffic(config: Mapping[str, str]) -> dict[str, Any]:
    """The generator settings that decide its events (defaults filled in), as the audit's truth uses them."""
    definition = generator_config_def()
    parsed = definition.parse({k: str(v) for k, v in config.items() if k in definition})
    return {key: value for key, value in parsed.items() if key not in NOT_TRAFFIC}
