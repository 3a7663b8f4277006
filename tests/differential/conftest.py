"""Differential tests: the same client scenario against onceflow's embedded broker and Apache Kafka.

``brokers`` gives both, started once per session with the same transaction settings, so a test runs
its scenario on each and compares what the clients observed. ``any_broker`` is parametrized over
the two for tests that only assert the same expectations on each. Tests share the brokers, so every
scenario names its own topics, groups and transactional ids (``observe.unique``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.apache_kafka import ApacheKafka

from .observe import SWEEP_INTERVAL_MS, Brokers, BrokerUnderTest


@pytest.fixture(scope="session")
def differential_embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """The embedded broker, configured like the Apache Kafka fixture (timed-out transaction sweep)."""
    instance = EmbeddedBroker(
        tmp_path_factory.mktemp("differential-embedded"),
        transaction_abort_timed_out_interval_ms=SWEEP_INTERVAL_MS,
    ).start()
    yield instance
    instance.stop()


@pytest.fixture(scope="session")
def brokers(differential_embedded: EmbeddedBroker, apache_kafka: ApacheKafka) -> Brokers:
    """Both brokers, embedded first."""
    return Brokers(
        BrokerUnderTest("embedded", differential_embedded.bootstrap_servers),
        BrokerUnderTest("apache-kafka", apache_kafka.bootstrap_servers),
    )


@pytest.fixture(params=["embedded", "apache-kafka"])
def any_broker(request: pytest.FixtureRequest, brokers: Brokers) -> BrokerUnderTest:
    """Each broker in turn."""
    return brokers.embedded if request.param == "embedded" else brokers.apache_kafka
