"""Pytest fixtures for a real broker process, available to every package's tests (pytest11 plugin).

- ``broker``: a started :class:`EmbeddedBroker` on a fresh temporary data dir and a free port,
  stopped after the test. If the test fails, the tail of the broker log is printed.
- ``make_topic``: ``make_topic(name=None, partitions=1)`` creates a topic on ``broker`` (a fresh
  ``ip_count_sink_...`` name unless ``name``) and returns its name.
- ``broker_factory``: ``broker_factory(data_dir=None, **options)`` starts further brokers (or a new
  one on an existing dir, e.g. to restart); all are stopped after the test.
- ``apache_kafka``: a real Apache Kafka (:class:`~onceflow.testing.broker.apache_kafka.ApacheKafka`)
  started once per session on a free port; tests share it, so they use their own topic, group and
  transactional id names. It fails (never skips) when ``make setup`` has not fetched the jars.
- ``apache_kafka_factory``: ``apache_kafka_factory(data_dir=None, **options)`` starts a private Apache
  Kafka (for tests that stop, ``kill -9`` or restart it); all are stopped after the test.
- ``apache_kafka_cluster``: three KRaft Apache Kafka nodes (replication 3, ``min.insync.replicas=2``;
  :class:`~onceflow.testing.broker.apache_kafka_cluster.ApacheKafkaCluster`), shared by the tests of a
  module and stopped after them; tests that kill or stop nodes leave it whole again for the next.
- ``kafka_broker``: a private broker process of the kind the test is parametrized with, ``embedded``
  or ``apache-kafka`` (both are :class:`~onceflow.broker.embedded.BrokerProcess`: start, stop,
  ``kill -9``, restart on the same data). A test module that requests it runs on the kinds named by
  its module-level ``BROKERS`` (default: embedded only), so the guarantees can be checked on both.

Importing this module is cheap: only the stdlib and :mod:`onceflow.broker.embedded` (the Apache Kafka
launcher is imported when its fixture is first used).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.jars import start_or_fail

if TYPE_CHECKING:
    from onceflow.testing.broker.apache_kafka import ApacheKafka
    from onceflow.testing.broker.apache_kafka_cluster import ApacheKafkaCluster

BrokerFactory = Callable[..., EmbeddedBroker]
ApacheKafkaFactory = Callable[..., "ApacheKafka"]


@pytest.fixture
def broker_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerFactory]:
    """Start brokers on demand; every one is stopped (SIGTERM, then SIGKILL) at teardown."""
    started: list[EmbeddedBroker] = []

    def factory(data_dir: Path | None = None, port: int = 0, **options: Any) -> EmbeddedBroker:
        directory = data_dir if data_dir is not None else tmp_path_factory.mktemp("broker")
        instance = EmbeddedBroker(directory, port, **options)
        started.append(instance)
        return instance.start()

    yield factory
    for instance in started:
        instance.stop()


@pytest.fixture
def broker(broker_factory: BrokerFactory, request: pytest.FixtureRequest) -> Iterator[EmbeddedBroker]:
    """A running broker on a fresh data dir and free port."""
    instance = broker_factory()
    yield instance
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        sys.stderr.write(f"\n--- broker log ({instance.log_path}) ---\n{instance.log_tail()}\n")


@pytest.fixture
def make_topic(broker: EmbeddedBroker) -> Callable[..., str]:
    from onceflow.testing.consumer.ip_counts import new_topic

    def make(name: str | None = None, partitions: int = 1) -> str:
        return new_topic(broker.bootstrap_servers, partitions, name)

    return make


def _start_apache_kafka(data_dir: Path, port: int = 0, **options: Any) -> ApacheKafka:
    from onceflow.testing.broker.apache_kafka import ApacheKafka

    return start_or_fail(ApacheKafka(data_dir, port, **options).start)


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafka]:
    """A running Apache Kafka shared by every test of the session; stopped at the end of it."""
    instance = _start_apache_kafka(tmp_path_factory.mktemp("apache-kafka"))
    yield instance
    instance.stop()


@pytest.fixture
def apache_kafka_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaFactory]:
    """Start private Apache Kafka brokers on demand (a data dir of an earlier one restarts it on its
    ports); every one is stopped (SIGTERM, then SIGKILL) at teardown."""
    started: list[ApacheKafka] = []

    def factory(data_dir: Path | None = None, port: int = 0, **options: Any) -> ApacheKafka:
        directory = data_dir if data_dir is not None else tmp_path_factory.mktemp("apache-kafka")
        instance = _start_apache_kafka(directory, port, **options)
        started.append(instance)
        return instance

    yield factory
    for instance in started:
        instance.stop()


@pytest.fixture(scope="module")
def apache_kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaCluster]:
    """Three Apache Kafka nodes in one KRaft cluster, started once per module; stopped after it."""
    from onceflow.testing.broker.apache_kafka_cluster import ApacheKafkaCluster

    cluster = ApacheKafkaCluster(tmp_path_factory.mktemp("kafka-cluster"))
    start_or_fail(cluster.start)
    yield cluster
    cluster.stop()


#: The kinds of broker ``kafka_broker`` can start.
BROKER_KINDS = ("embedded", "apache-kafka")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``kafka_broker`` with the module's ``BROKERS`` (default: the embedded broker)."""
    if "kafka_broker" in metafunc.fixturenames:
        kinds = tuple(getattr(metafunc.module, "BROKERS", ("embedded",)))
        unknown = sorted(set(kinds) - set(BROKER_KINDS))
        if unknown:
            raise ValueError(f"{metafunc.module.__name__}.BROKERS: unknown {unknown}; known: {BROKER_KINDS}")
        metafunc.parametrize("kafka_broker", kinds, indirect=True)


@pytest.fixture
def kafka_broker(
    request: pytest.FixtureRequest,
    broker_factory: BrokerFactory,
    apache_kafka_factory: ApacheKafkaFactory,
) -> EmbeddedBroker | ApacheKafka:
    """A started broker process of the test's kind (see the module docstring)."""
    kind = getattr(request, "param", "embedded")
    return apache_kafka_factory() if kind == "apache-kafka" else broker_factory()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember each phase's report on the item so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
