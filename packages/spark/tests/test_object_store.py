"""A Spark job in local[2] whose staging root and checkpoint are both on an S3 API store (S3Proxy), killed
with -9 and restarted from that checkpoint: every sink ends EXACT (issue 21, items 2 and 5).

The driver gets the store from its ``[staging.s3]`` settings only; it exports them to its JVM (Hadoop's
S3A connector writes the checkpoint) and to Spark's Python workers (the tasks stage Arrow files on S3).
The coordinator and the participant get the same store from the standard AWS variables.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract.staging import S3Settings, StagingStore, parse_staging_uri
from onceflow.core.toml_writer import to_toml
from onceflow.ipcount.schema import ENTRYPOINT
from onceflow.spark.runner.object_store import HADOOP_AWS_CLASSPATH_ENV
from onceflow.testing.s3 import CLIENT_CHECKSUM_ENV, S3ProxyProcess, hadoop_aws_classpath
from onceflow.testing.sinks.postgres import PostgresServer

from .conftest import TEST_SPARK, TEST_TRIGGER_MS
from .driver_process import DriverProcess
from .system import SinkSystem, create_database, encoded_events, end_input, produce_events, recent_model, truth

pytestmark = pytest.mark.slow

EVENTS_PER_ROUND = 1_500
JOB = "ipcount"


@pytest.fixture
def system(
    broker: EmbeddedBroker, tmp_path: Path, postgres_server: PostgresServer, s3proxy: S3ProxyProcess
) -> Iterator[SinkSystem]:
    dsn = create_database(postgres_server.dsn(), f"spark_{uuid.uuid4().hex[:12]}")
    staging = s3proxy.uri(f"{tmp_path.name}/staging")
    started = SinkSystem(broker, tmp_path / "system", dsn, staging_uri=staging, env=s3proxy.client_env()).start()
    yield started
    started.stop()


def _committed_batches(log: str) -> list[int]:
    return [int(batch) for batch in re.findall(r"sink\.batch_committed job=\S+ batch=(\d+)", log)]


def test_staging_and_checkpoint_on_s3_survive_a_driver_kill(
    broker: EmbeddedBroker, system: SinkSystem, s3proxy: S3ProxyProcess, tmp_path: Path
) -> None:
    """Steps:
    1. The driver probes ``s3://onceflow/<test>/staging``, starts with its checkpoint on
       ``s3a://onceflow/<test>/checkpoint`` and runs its first batches (no window closes yet, so
       they stage no row and commit no transaction).
    2. ``kill -9`` the driver (JVM and Python workers with it) after Spark logged its first batches:
       the offset and commit logs are objects on S3Proxy.
    3. A new driver resumes from that checkpoint (its first batch follows the last committed one),
       reads the rest of the input and closes every window: its batches commit rows staged on S3.
    4. Kafka, SQLite and PostgreSQL hold exactly the truth; the driver's log never shows the secret.
    5. The replay audit, with the store in the job's ``[staging.s3]`` only (no AWS variable): it reads
       the checkpoint and stages its side outputs on S3, and every sink is EXACT.
    """
    model = recent_model(21)
    expected = truth(model, 2 * EVENTS_PER_ROUND)
    checkpoint = s3proxy.uri(f"{tmp_path.name}/checkpoint").replace("s3://", "s3a://")
    config = tmp_path / "job.toml"
    config.write_text(
        "\n".join(
            [
                f'job = "{JOB}"',
                f'entrypoint = "{ENTRYPOINT}"',
                f'checkpoint_location = "{checkpoint}"',
                f'staging_root = "{system.staging_uri}"',
                f"trigger_interval_ms = {TEST_TRIGGER_MS}",
                "[kafka]",
                f'bootstrap_servers = "{broker.bootstrap_servers}"',
                "[source]",
                "max_offsets_per_trigger = 1000",
                "[coordinator]",
                f'target = "{system.coordinator.target}"',
                "[restart]",
                "attempts = 0",
                "[spark]",
                f'master = "{TEST_SPARK["master"]}"',
                "[staging.s3]",
                *(f'{key} = "{value}"' for key, value in s3proxy.s3_settings().items()),
                *(f'[[participants]]\nsink = "{p["sink"]}"\ntarget = "{p["target"]}"' for p in system.participants),
            ]
        )
        + "\n"
        + to_toml({"outputs": system.outputs})
    )
    env = {**CLIENT_CHECKSUM_ENV, HADOOP_AWS_CLASSPATH_ENV: hadoop_aws_classpath()}
    driver = DriverProcess(config, tmp_path / "driver.log")
    # Step 1
    produce_events(broker.bootstrap_servers, encoded_events(model, 0, EVENTS_PER_ROUND))
    driver.start(env=env)
    driver.wait_for_log("staging.probed")
    store = StagingStore(S3Settings.model_validate(s3proxy.s3_settings()), environ={})
    commit_log = parse_staging_uri(checkpoint).child("commits")
    deadline = time.monotonic() + 240
    while not (commits := [int(n) for n in store.list_names(commit_log) if n.isdigit()]):
        assert time.monotonic() < deadline and driver.is_running(), f"no commit log on S3:\n{driver.log()[-3000:]}"
        time.sleep(0.2)
    # Step 2
    driver.kill()
    first_life = driver.log()
    # its batches went through the sink (step 1: without a row, without a transaction)
    assert re.search(r"sink\.batch_(committed|empty) job=", first_life), first_life[-3000:]
    # Step 3
    produce_events(broker.bootstrap_servers, encoded_events(model, EVENTS_PER_ROUND, 2 * EVENTS_PER_ROUND))
    end_input(broker.bootstrap_servers)
    driver.start(env=env)
    try:
        system.wait_for_results(expected, timeout=300)
    finally:
        assert driver.stop() == 0, driver.log()[-4000:]
    second_life = driver.log()
    resumed = _committed_batches(second_life)
    assert resumed and resumed[0] >= max(commits), (commits, resumed)
    # Step 4
    system.wait_exact(expected)
    for log in (first_life, second_life):
        assert s3proxy.secret_access_key not in log and s3proxy.access_key_id not in log
    # Step 5
    environ = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    audit = system.replay_audit([config], env={**environ, **env})
    assert audit.returncode == 0, audit.stdout + audit.stderr[-3000:]
    assert audit.stdout.endswith("verdict: EXACT\n"), audit.stdout
