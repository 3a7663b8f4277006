"""The Apache Kafka fixture itself: it starts from the cached jars, serves clients, and a
``kill -9`` followed by a restart on the same data dir and port keeps every acknowledged record."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from onceflow.testing.broker.apache_kafka import (
    FAST_START_JVM_OPTIONS,
    ApacheKafka,
    KafkaJarsMissing,
    write_class_archive,
)
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.fixtures import ApacheKafkaFactory

from .observe import unique, wait_until


def test_session_kafka_serves_produce_and_consume(apache_kafka: ApacheKafka) -> None:
    topic = unique("fixture")
    create_topic(apache_kafka.bootstrap_servers, topic, partitions=2)
    acked = produce_acked(apache_kafka.bootstrap_servers, topic, [b"a", b"b", b"c"], partition=1)
    assert [offset for _, offset, _ in acked] == [0, 1, 2]
    read = read_topic(apache_kafka.bootstrap_servers, topic, idle_timeout=0.3)
    assert [(r.partition, r.offset, r.value) for r in read] == [(1, 0, b"a"), (1, 1, b"b"), (1, 2, b"c")]
    assert apache_kafka.is_running()
    assert apache_kafka.log_path.is_file()


def test_kill_9_and_restart_keep_acked_records_on_the_same_port(apache_kafka_factory: ApacheKafkaFactory) -> None:
    kafka = apache_kafka_factory()
    port, controller_port = kafka.port, kafka.controller_port
    topic = unique("survivor")
    create_topic(kafka.bootstrap_servers, topic)
    produce_acked(kafka.bootstrap_servers, topic, [b"v%d" % i for i in range(50)])
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": unique("survivor-txn")})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"txn")
    producer.commit_transaction(30)
    # Kafka writes a commit's markers after it answered EndTxn; a kill -9 before they are written
    # leaves the commit to the restarted transaction coordinator, which on a loaded machine was seen
    # to take minutes. This test is about the fixture (acked data and ports survive kill -9), so the
    # kill comes once the commit is visible.
    wait_until(
        lambda: b"txn" in [r.value for r in read_topic(kafka.bootstrap_servers, topic, idle_timeout=0.3)],
        timeout=60,
        what="the committed transaction visible before the kill",
    )

    kafka.kill()
    assert not kafka.is_running()
    kafka.start()
    assert (kafka.port, kafka.controller_port) == (port, controller_port)
    produce_acked(kafka.bootstrap_servers, topic, [b"after"])
    kafka.stop()

    again = apache_kafka_factory(kafka.data_dir)
    assert again.port == port
    expected = [b"v%d" % i for i in range(50)] + [b"txn", b"after"]
    seen: list[list[bytes | None]] = []

    def everything_visible() -> bool:
        seen.append([r.value for r in read_topic(again.bootstrap_servers, topic, idle_timeout=0.3)])
        return seen[-1] == expected

    try:
        wait_until(everything_visible, timeout=60, what="every acknowledged record visible")
    except TimeoutError:
        assert seen[-1] == expected


def test_missing_jars_say_to_run_make_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tools" / "kafka").mkdir(parents=True)
    (tmp_path / "tools" / "kafka" / "pom.xml").write_text("<kafka.version>9.9.9</kafka.version>")
    with pytest.raises(KafkaJarsMissing, match=r"Apache Kafka 9\.9\.9 jars are missing .* run 'make setup'"):
        ApacheKafka(tmp_path / "data").start()


def test_a_broker_maps_kafka_classes_from_the_class_archive(tmp_path: Path) -> None:
    """Steps:
    1. The class archive of Kafka's jars is written (``make setup`` did it already: then a no-op).
    2. A broker starts with class loading logged, and serves.
    3. Kafka's classes came from the archive's top layer, not from the jars.
    """
    # Step 1
    archive = write_class_archive()
    assert archive.is_file()
    # Step 2
    load_log = tmp_path / "class-load.log"
    broker = ApacheKafka(
        tmp_path / "kafka", jvm_options=(*FAST_START_JVM_OPTIONS, f"-Xlog:class+load=info:file={load_log}")
    )
    broker.start()
    try:
        assert f"-XX:SharedArchiveFile={archive}" in broker.command()
        create_topic(broker.bootstrap_servers, unique("mapped"))
    finally:
        broker.stop()
    # Step 3: lambdas and generated classes are made at run time either way
    kafka_classes = [line for line in load_log.read_text().splitlines() if " kafka." in line or ".kafka." in line]
    shared = [line for line in kafka_classes if "source: shared objects file (top)" in line]
    from_jars = [line for line in kafka_classes if ".jar" in line.partition(" source: ")[2]]
    assert len(shared) > 1000, f"{len(shared)} of {len(kafka_classes)} Kafka classes from the archive"
    assert len(from_jars) < 0.1 * len(shared), f"{len(from_jars)} read from jars, {len(shared)} from the archive"
    assert "Unable to use shared archive" not in broker.log_path.read_text()
