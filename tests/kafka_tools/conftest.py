"""Kafka's own tools (kafka-tools jar) against the embedded broker, and where it matters Apache Kafka.

The tools run as ``java`` child processes from the cached jars
(:mod:`onceflow.broker.testing.kafka_tools`); every test names its own topics, groups and
transactional ids, so tests may share a broker.
"""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def name() -> str:
    """A fresh suffix for this test's topic, group and transactional id names."""
    return uuid.uuid4().hex[:8]
