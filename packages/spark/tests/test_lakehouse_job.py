"""One job writing Kafka, PostgreSQL, a Delta table and an Iceberg table in one transaction per micro-batch,
with kill -9 of every service, checked against the generator's truth; then the replay audit, the
tables' time travel, and the Delta table read by Spark itself from its transaction log.

The IP-count job's counts go to a Kafka topic (Avro), a PostgreSQL table, a Delta table and an
Iceberg table (upsert on ``(window_start, ip)``); its dead letters are appended to a Delta and an
Iceberg table. The participant server hosts all five sinks (the Iceberg catalog lives in the same
PostgreSQL database). While the input arrives in rounds, the test kill -9s the driver every round
and, in turn, the coordinator, the participant server and the broker.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import SinkBinding, SinkMode
from onceflow.core.settings import load_settings
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA
from onceflow.sinks.lakehouse.open import open_format
from onceflow.sinks.readback import LakehouseReader, reader_for
from onceflow.sinks.server.settings import DeltaSink, IcebergSink, ParticipantSettings
from onceflow.testing.broker.clients import create_topic, read_topic
from onceflow.testing.sinks.postgres import PostgresServer

from .driver_process import DriverProcess
from .system import (
    Key,
    SinkSystem,
    create_database,
    encoded_events,
    end_input,
    produce_events,
    recent_model,
    truth,
    wait_until,
)

pytestmark = pytest.mark.slow

ROUNDS = 3
EVENTS_PER_ROUND = 1_000
GARBAGE = (b"", b"not avro", b"\xc3\x01" + b"\xff" * 8)
TOPIC = "ipcount_lake"
KEYS = ["window_start", "ip"]
OUTPUTS: dict[str, Any] = {
    "results": [
        {"sink": "kafka", "topic": TOPIC, "keys": ["ip"], "value_format": "avro"},
        {"sink": "postgres", "table": "ip_counts", "mode": "upsert", "keys": KEYS},
        {"sink": "delta", "table": "ip_counts", "mode": "upsert", "keys": KEYS},
        {"sink": "iceberg", "table": "ip_counts", "mode": "upsert", "keys": KEYS},
    ],
    "dead_letters": [
        {"sink": "delta", "table": "dead_letters", "mode": "append"},
        {"sink": "iceberg", "table": "dead_letters", "mode": "append"},
    ],
}
LAKEHOUSE = ("delta", "iceberg")


@pytest.fixture
def system(broker: EmbeddedBroker, tmp_path: Path, postgres_server: PostgresServer) -> Iterator[SinkSystem]:
    dsn = create_database(postgres_server.dsn(), f"lake_{uuid.uuid4().hex[:12]}")
    started = SinkSystem(broker, tmp_path / "system", dsn, lakehouse=True).start()
    yield started
    started.stop()


def _reader(system: SinkSystem, sink: str) -> LakehouseReader:
    settings = load_settings(ParticipantSettings, system.work_dir / "participant.toml", env={})
    (configured,) = [s for s in settings.sinks if s.name == sink]
    reader = reader_for(configured)
    assert isinstance(reader, LakehouseReader)
    return reader


def _counts(rows: list[dict[str, Any]]) -> dict[Key, int]:
    found: dict[Key, int] = {}
    for row in rows:
        key = (int(row["window_start"]), str(row["ip"]))
        assert key not in found, f"{key} is held twice"
        found[key] = int(row["count"])
    return found


def _binding(sink: str) -> SinkBinding:
    return SinkBinding(
        sink=sink, table="ip_counts", mode=SinkMode.UPSERT, keys=tuple(KEYS), schema=IP_COUNT_ARROW_SCHEMA
    )


def _topic_counts(system: SinkSystem) -> dict[Key, int]:
    from onceflow.core.avro.schemas_topic import SchemasTopic

    schemas = SchemasTopic(system.broker.bootstrap_servers)
    found: dict[Key, int] = {}
    for record in read_topic(system.broker.bootstrap_servers, TOPIC, idle_timeout=1.0):
        assert record.value is not None
        row = schemas.decode(record.value)
        key = (row["window_start"], row["ip"])
        assert key not in found, f"{key} was produced twice (append mode emits a window once)"
        found[key] = row["count"]
    return found


@pytest.mark.timeout(900)
def test_one_job_into_kafka_postgres_delta_and_iceberg_stays_exact_across_kills(
    broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path, spark: SparkSession
) -> None:
    """Steps:
    1. Produce the input in rounds; each round, once the driver committed a batch of it, kill -9 one
       service (the coordinator and the driver, the participant server, the broker) and restart it.
    2. End the input: every sink equals the truth exactly (Kafka, PostgreSQL, Delta, Iceberg), and
       each dead letter is in both lakehouse tables once.
    3. The replay audit of the job is EXACT for its six bindings.
    4. Time travel: each table has one version per committed batch, in batch order, each batch
       once; at every batch the Delta and the Iceberg table hold the same rows.
    5. Spark reads the Delta table from its transaction log (its own JSON and Parquet readers):
       the same rows, and the ``txn`` action of the job at the last committed batch.
    """
    rng = random.Random(26)
    model = recent_model(26)
    create_topic(broker.bootstrap_servers, TOPIC, partitions=1)
    config = system.job_config(tmp_path, "lakejob", {"entrypoint": "onceflow.ipcount.job:job", "outputs": OUTPUTS})
    driver = DriverProcess(config, tmp_path / "lakejob.log")
    produced = 0

    def produce_round() -> None:
        nonlocal produced
        values = encoded_events(model, produced, produced + EVENTS_PER_ROUND)
        for i, junk in enumerate(GARBAGE):
            values.insert((i + 1) * len(values) // (len(GARBAGE) + 1), junk)
        produce_events(broker.bootstrap_servers, values)
        produced += EVENTS_PER_ROUND

    def restart_coordinator() -> None:
        system.coordinator.kill()
        system.coordinator.start()

    def restart_broker() -> None:
        broker.kill()
        broker.start()

    # Step 1
    driver.start()
    for round_number, kill in enumerate((restart_coordinator, system.restart_participant, restart_broker)):
        committed = driver.log().count("sink.batch_committed")
        produce_round()
        _wait_for_commits(driver, more_than=committed)  # it is streaming: kill mid-stream
        time.sleep(rng.uniform(0.0, 3.0))
        if round_number == 0:
            driver.kill()  # the driver once (a restart costs a JVM); it lives through the other kills
        kill()
        if round_number == 0:
            driver.start()
    # Step 2
    produce_round()
    end_input(broker.bootstrap_servers)
    assert driver.process is not None and driver.process.poll() is None, driver.log()[-3000:]
    expected = truth(model, produced)
    garbage = len(GARBAGE) * (ROUNDS + 1)

    def all_exact() -> None:
        assert _topic_counts(system) == expected, "kafka"
        assert system.postgres_results() == expected, "postgres"
        for sink in LAKEHOUSE:
            with _reader(system, sink) as reader:
                assert _counts(reader.rows(_binding(sink))) == expected, sink
                letters = reader.format.read("dead_letters")
                assert letters is not None and letters.num_rows == garbage, f"{sink}: dead letters"
                where = {tuple(r[c] for c in ("source_topic", "source_partition", "source_offset"))
                         for r in letters.to_pylist()}  # fmt: skip
                assert len(where) == garbage, f"{sink}: a dead letter was committed twice"

    try:
        wait_until(all_exact, timeout=420)
    finally:
        code = driver.stop()
        assert code == 0, f"driver exit {code}:\n{driver.log()[-3000:]}"
    # Step 3
    audit = system.replay_audit([config])
    assert audit.returncode == 0, audit.stdout + audit.stderr[-3000:]
    assert audit.stdout.count(": EXACT  matching=") == 6, audit.stdout
    assert audit.stdout.endswith("verdict: EXACT\n"), audit.stdout
    # Step 4
    boundaries = {sink: _batch_boundaries(system, sink) for sink in LAKEHOUSE}
    assert list(boundaries["delta"]) == list(boundaries["iceberg"])
    batches = [int(txn.rsplit(":", 1)[1]) for txn in boundaries["delta"]]
    assert batches == sorted(set(batches)), f"a batch was committed twice, or out of order: {batches}"
    for txn, rows in boundaries["delta"].items():
        assert rows == boundaries["iceberg"][txn], f"Delta and Iceberg differ at {txn}"
    assert boundaries["delta"][f"lakejob:{batches[-1]}"] == expected
    # Step 5
    table = system.work_dir / "lake" / "ip_counts"
    rows, last_batch = spark_read_delta_log(spark, table, app_id="lakejob")
    assert rows == expected
    assert last_batch == batches[-1]


def _wait_for_commits(driver: DriverProcess, *, more_than: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while driver.log().count("sink.batch_committed") <= more_than:
        assert time.monotonic() < deadline, f"no batch committed in {timeout}s:\n{driver.log()[-3000:]}"
        time.sleep(0.5)


def _batch_boundaries(system: SinkSystem, sink: str) -> dict[str, dict[Key, int]]:
    """The rows of each table version onceflow committed, by ``<job>:<batch>``, oldest first; a
    version it did not commit (the table's creation) holds no row."""
    settings = load_settings(ParticipantSettings, system.work_dir / "participant.toml", env={})
    (configured,) = [s for s in settings.sinks if s.name == sink]
    assert isinstance(configured, DeltaSink | IcebergSink)
    table_format = open_format(sink, configured.options, create=False)
    found: dict[str, dict[Key, int]] = {}
    try:
        for version, txn in table_format.history("ip_counts"):
            held = table_format.read("ip_counts", version)
            assert held is not None
            rows = _counts(held.to_pylist())
            if txn is None:
                assert not rows, f"{sink} version {version} was not committed by onceflow, yet holds rows"
                continue
            found[txn] = rows
    finally:
        table_format.close()
    return found


def spark_read_delta_log(spark: SparkSession, table: Path, *, app_id: str) -> tuple[dict[Key, int], int]:
    """The table's current rows and ``app_id``'s last ``txn`` version, as Spark computes them from the
    Delta transaction log with its own JSON and Parquet readers.

    ``delta-spark`` is not used: no build of it for Spark 4.3 resolves from Maven Central (its 4.3
    release is built for Spark 4.1 and fails on 4.3 with a NoSuchMethodError), so the snapshot is
    replayed here as the Delta protocol defines it: a file is live when its newest ``add`` is not
    followed by a ``remove``.
    """
    actions = spark.read.json(str(table / "_delta_log" / "*.json")).withColumn(
        "version", F.regexp_extract(F.input_file_name(), r"(\d+)\.json$", 1).cast("long")
    )
    adds = actions.where("add IS NOT NULL").select("version", F.col("add.path").alias("path"))
    live = adds
    if "remove" in actions.columns:
        removes = actions.where("remove IS NOT NULL").select(
            F.col("version").alias("removed_at"), F.col("remove.path").alias("path")
        )
        live = adds.join(removes, "path", "left").where("removed_at IS NULL OR removed_at < version")
    paths = sorted({str(table / row["path"]) for row in live.select("path").collect()})
    data = spark.read.parquet(*paths) if paths else None
    rows = {} if data is None else {(int(r["window_start"]), str(r["ip"])): int(r["count"]) for r in data.collect()}
    versions = actions.where(F.col("txn.appId") == app_id).agg(F.max("txn.version")).collect()[0][0]
    return rows, int(versions)
