"""Kafka's own tools (kafka-tools jar) against the embedded broker, and where it matters Apache Kafka.

The tools run as ``java`` child processes from the cached jars
(:mod:`onceflow.testing.broker.kafka_tools`); every test names its own topics, groups and
transactional ids, so tests may share a broker.
"""

from __future__ import annotations

import uuid

import pytest

from onceflow.broker.embedded import BrokerProcess, EmbeddedBroker
from onceflow.testing.broker.apache_kafka import ApacheKafka


@pytest.fixture
def name() -> str:
    """A fresh suffix for this test's topic, group and transactional id names."""
    return uuid.uuid4().hex[:8]


@pytest.fixture(params=["embedded", "apache-kafka"])
def any_broker(request: pytest.FixtureRequest) -> BrokerProcess:
    """The test's own embedded broker, then the session's Apache Kafka."""
    if request.param == "embedded":
        embedded: EmbeddedBroker = request.getfixturevalue("broker")
        return embedded
    kafka: ApacheKafka = request.getfixturevalue("apache_kafka")
    return kafka
