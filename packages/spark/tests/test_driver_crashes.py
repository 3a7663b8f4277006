"""kill -9 of the Spark driver at random points, and exactly between the coordinator's COMMITTED and
Spark's commit log: after every restart the sinks still hold exact results only (docs/design.md failure matrix)."""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import TransactionId, TransactionState
from onceflow.contract.clients import CoordinatorClient
from onceflow.ipcount.schema import ENTRYPOINT
from onceflow.testing.faults.spark import CRASH_ENV
from onceflow.testing.spark.input import encoded_events, produce_events

from .conftest import TEST_SPARK, TEST_TRIGGER_MS
from .driver_process import DriverProcess
from .system import Key, SinkSystem, end_input, recent_model, spark_job_config, truth

pytestmark = pytest.mark.slow

ROUNDS = 2  # kill -9 at random points (the three-jobs test adds 12 more kills)
EVENTS_PER_ROUND = 3_000
MAX_OFFSETS = 1_500
JOB = "ipcount"


def _assert_only_exact_results(system: SinkSystem, expected: dict[Key, int]) -> None:
    """Whatever the sinks hold is final and exact: no wrong count, no duplicate, no stray key."""
    for name, got in (
        ("sqlite", system.sqlite_results()),
        ("postgres", system.postgres_results()),
        ("kafka", system.kafka_results()),
    ):
        wrong = {k: (v, expected.get(k)) for k, v in got.items() if expected.get(k) != v}
        assert not wrong, f"{name} holds wrong results: {list(wrong.items())[:5]}"


def _last_committed(checkpoint: Path) -> int:
    commits = [int(p.name) for p in (checkpoint / "commits").glob("*") if p.name.isdigit()]
    return max(commits, default=-1)


def _coordinator_state(system: SinkSystem, batch: int) -> TransactionState:
    with CoordinatorClient(system.coordinator.target, timeout_s=30) as client:
        return client.get_transaction(TransactionId(JOB, batch)).state


@pytest.mark.parametrize(
    ("stage_on", "rounds"),
    # the driver's staging: one kill at random (the three-jobs test kills such drivers more)
    [("tasks", ROUNDS), ("driver", 1)],
)
def test_killed_drivers_restart_from_the_checkpoint_and_the_sinks_stay_exact(
    broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path, stage_on: str, rounds: int
) -> None:
    seed = int(os.environ.get("ONCEFLOW_TEST_SEED", "2026"))
    rng = random.Random(seed)
    model = recent_model(seed)
    total = EVENTS_PER_ROUND * (rounds + 2)
    expected = truth(model, total)
    checkpoint = tmp_path / "checkpoint"
    config = spark_job_config(
        tmp_path / "job.toml",
        {
            "job": JOB,
            "entrypoint": ENTRYPOINT,
            "checkpoint_location": str(checkpoint),
            "staging_root": str(system.staging_root),
            "trigger_interval_ms": TEST_TRIGGER_MS,
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "source": {"max_offsets_per_trigger": MAX_OFFSETS},
            "coordinator": {"target": system.coordinator.target},
            "spark": TEST_SPARK,
            "restart": {"attempts": 0},
            "stage_on": stage_on,
            "participants": system.participants,
            "outputs": system.outputs,
        },
    )
    driver = DriverProcess(config, tmp_path / "driver.log")
    produced = 0

    def produce_round() -> None:
        nonlocal produced
        produce_events(broker.bootstrap_servers, encoded_events(model, produced, produced + EVENTS_PER_ROUND))
        produced += EVENTS_PER_ROUND

    # kill -9 at random points (seeded: ONCEFLOW_TEST_SEED) up to 18 s after the driver is up: while
    # it registers and plans, while batch tasks read and stage, during the coordinator's 2PC, and
    # between batches (the first batch of a fresh driver takes ~10-20 s here, later ones ~1 s)
    for _ in range(rounds):
        produce_round()
        driver.start()
        driver.wait_for_log("driver.started")
        with pytest.raises(subprocess.TimeoutExpired):
            driver.wait(rng.uniform(1.0, 18.0))  # it must still be running when the kill comes
        driver.kill()
        _assert_only_exact_results(system, expected)

    # kill between the coordinator's COMMITTED and Spark's commit log, after the first batch from the
    # second one this driver runs that commits rows (a batch without rows commits no transaction)
    produce_round()
    driver.start(env={CRASH_ENV: str(_last_committed(checkpoint) + 2)})
    code = driver.wait(240)
    # -9: a Python worker committed and killed the driver; 137: the driver committed and exited at once
    assert code in (-9, 137), f"the crash hook should have killed the driver (exit {code}):\n{driver.log()[-4000:]}"
    crashed = re.search(r"fault\.crash point=commit-returned job=\S+ batch=(\d+)", driver.log())
    assert crashed, driver.log()[-4000:]
    target = int(crashed.group(1))
    assert _coordinator_state(system, target) in (
        TransactionState.COMMITTED,
        TransactionState.COMMITTING,
    )
    assert not (checkpoint / "commits" / str(target)).exists(), "Spark must not have logged the commit"
    assert (checkpoint / "offsets" / str(target)).exists()
    _assert_only_exact_results(system, expected)

    # the restarted driver re-runs that batch (the coordinator answers COMMITTED) and finishes the input
    produce_round()
    assert produced == total
    end_input(broker.bootstrap_servers)
    driver.start()
    try:
        system.wait_for_results(expected, timeout=300)
    finally:
        assert driver.stop() == 0, driver.log()[-4000:]
    assert f"batch={target} " in driver.log() and "state=COMMITTED" in driver.log()
    system.wait_exact(expected)
