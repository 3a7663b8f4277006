"""The IP-count job on a real Spark standalone cluster (a master and two workers, each its own JVM),
with a kill -9 in the middle of a batch: of an executor JVM, of a worker, of the driver.

Executors run in their own JVMs and Python workers on the workers, not in the driver. The job is a
file outside every ``sys.path`` (shipped to the executors by onceflow) importing a helper module
listed in ``spark.submit.pyFiles`` (shipped by Spark); its write tasks wait at a hold point
(:mod:`cluster_jobs`) while the test kills a process, so each kill lands after a batch was planned
and its state read, and before its rows were staged. Each test ends with every sink (Kafka, SQLite,
PostgreSQL) exactly equal to the generator's truth. One cluster serves the module's tests.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import onceflow.spark.submit
from onceflow.testing.spark import SparkStandaloneCluster, kill_process, process_alive, spark_home
from onceflow.testing.spark.input import encoded_events, produce_events

from .cluster_jobs import Hold, JobFiles, write_job_files
from .conftest import TEST_TRIGGER_MS
from .driver_process import DriverProcess
from .system import SinkSystem, end_input, recent_model, spark_job_config, truth

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

EVENTS_PER_ROUND = 1_500
JOB = "ipcount"
ONCEFLOW = str(Path(sys.executable).parent / "onceflow")


class ClusterRun:
    """One job on the cluster: its config, its driver, its hold point, and the input in rounds."""

    def __init__(self, cluster: SparkStandaloneCluster, system: SinkSystem, tmp_path: Path) -> None:
        self.cluster = cluster
        self.system = system
        self.files: JobFiles = write_job_files(tmp_path / "user")
        self.hold = Hold(tmp_path / "hold")
        # 100 events a second of event time: a round spans three windows, which close while the job runs
        self.model = dataclasses.replace(recent_model(21), event_rate=100)
        self.produced = 0
        self.checkpoint = tmp_path / "checkpoint"
        settings: dict[str, Any] = {
            "job": JOB,
            "checkpoint_location": str(self.checkpoint),
            "staging_root": str(system.staging_root),
            "trigger_interval_ms": TEST_TRIGGER_MS,
            "kafka": {"bootstrap_servers": system.broker.bootstrap_servers},
            "source": {"max_offsets_per_trigger": EVENTS_PER_ROUND},
            "coordinator": {"target": system.coordinator.target},
            "participants": system.participants,
            "outputs": system.outputs,
            "params": {"hold_dir": str(self.hold.folder)},
            "restart": {"attempts": 0},
            "spark": {
                "master": cluster.url,
                "conf": {**cluster.client_conf, "spark.submit.pyFiles": str(self.files.helper)},
            },
        }
        self.config = spark_job_config(tmp_path / "job.toml", settings)
        self.config.chmod(0o600)  # it holds the cluster's secret
        command = [ONCEFLOW, "job", "run", self.files.entrypoint, "--config", str(self.config)]
        self.driver = DriverProcess(self.config, tmp_path / "driver.log", [*command, "--master", cluster.url])

    def produce_round(self) -> None:
        start, self.produced = self.produced, self.produced + EVENTS_PER_ROUND
        produce_events(self.system.broker.bootstrap_servers, encoded_events(self.model, start, self.produced))

    def held_task(self, driver: DriverProcess) -> dict[str, Any]:
        """Produce a round with the hold armed: the first write task with rows to write waits.

        It runs in a Python worker of an executor JVM of a worker, which imported both files from
        what Spark shipped to it, not from where the user keeps them; its batch has not committed.
        """
        self.hold.arm()
        self.produce_round()
        mark = self.hold.wait_for_mark(480, alive=driver.is_running)
        worker = self.cluster.worker_running(mark["pid"])
        assert self.cluster.executor_running(mark["pid"]) in worker.executor_pids()
        assert mark["job_module"].startswith(str(worker.work_dir)), mark
        assert mark["job_module"].endswith("onceflow_job_held_ip_count.py"), mark
        assert mark["helper_module"].startswith(str(worker.work_dir)), mark
        assert not self.committed(mark["batch"]), mark
        return mark

    def committed(self, batch: int) -> bool:
        return (self.checkpoint / "commits" / str(batch)).exists()

    def wait_committed(self, batch: int, driver: DriverProcess) -> None:
        self.cluster.wait_for(
            lambda: self.committed(batch) or not driver.is_running(), f"batch {batch} committed", timeout=300
        )
        assert self.committed(batch), driver.log()[-6000:]

    def assert_only_exact_results(self) -> None:
        """Whatever the sinks hold so far is final and exact: no wrong count, no duplicate, no stray key."""
        expected = truth(self.model, self.produced)
        for name, got in (
            ("sqlite", self.system.sqlite_results()),
            ("postgres", self.system.postgres_results()),
            ("kafka", self.system.kafka_results()),
        ):
            assert got, f"{name} holds no results yet"
            wrong = {k: (v, expected.get(k)) for k, v in got.items() if expected.get(k) != v}
            assert not wrong, f"{name} holds wrong results: {list(wrong.items())[:5]}"

    def finish(self, driver: DriverProcess, *, stopped: int = 0) -> None:
        """End the input: every sink must equal the truth of every event produced. SIGTERM then stops
        the driver, which exits with ``stopped``."""
        self.hold.release()
        end_input(self.system.broker.bootstrap_servers)
        expected = truth(self.model, self.produced)
        try:
            self.system.wait_for_results(expected, timeout=300)
        finally:
            assert driver.stop() == stopped, driver.log()[-6000:]
        self.system.wait_exact(expected)


@pytest.fixture
def run(spark_cluster: SparkStandaloneCluster, system: SinkSystem, tmp_path: Path) -> Iterator[ClusterRun]:
    cluster_run = ClusterRun(spark_cluster, system, tmp_path)
    yield cluster_run
    cluster_run.hold.release()
    cluster_run.driver.kill()


def test_kill_9_of_an_executor_then_of_a_worker_in_the_middle_of_batches(run: ClusterRun) -> None:
    """Steps:
    1. A write task waits; kill -9 its executor JVM. The worker launches a new executor for the
       application, the batch's lost tasks run again, it commits, and the sinks hold exact results.
    2. A write task of a later batch waits; kill -9 its worker's JVM. Its executors exit, the master
       marks it lost, and the batch runs on the other worker. The restarted worker registers again
       and the application gets an executor there.
    3. End the input: every sink equals the truth.
    """
    cluster, driver = run.cluster, run.driver
    driver.start()
    # Step 1
    mark = run.held_task(driver)
    executor = cluster.executor_running(mark["pid"])
    kill_process(executor)
    run.hold.release()
    cluster.wait_for(
        lambda: len(cluster.executor_pids()) == 2 and executor not in cluster.executor_pids(),
        "a replacement executor",
    )
    run.wait_committed(mark["batch"], driver)
    run.assert_only_exact_results()
    assert "Lost executor" in driver.log()
    # Step 2
    mark = run.held_task(driver)
    worker = cluster.worker_running(mark["pid"])
    executors, address = worker.executor_pids(), worker.address
    assert worker.pid is not None
    kill_process(worker.pid)  # the worker's JVM only: its executors notice, as on a real node
    cluster.wait_for(lambda: not any(map(process_alive, executors)), "the lost worker's executors exiting")
    cluster.wait_for(lambda: address not in cluster.alive_workers(), "the master marking the worker lost")
    run.hold.release()
    run.wait_committed(mark["batch"], driver)
    worker.start()
    cluster.wait_for(lambda: len(cluster.executor_pids()) == 2, "an executor on the restarted worker")
    run.assert_only_exact_results()
    # Step 3
    run.finish(driver)


def test_kill_9_of_the_driver_then_spark_submit_resumes_from_the_checkpoint(run: ClusterRun) -> None:
    """A write task waits; kill -9 the driver (``onceflow job run``): the master ends the application
    and its executors. The driver submitted again with spark-submit (``onceflow.spark.submit``, the
    helper module in ``--py-files``) runs the batch again from the checkpoint, and every sink is exact."""
    run.driver.start()
    mark = run.held_task(run.driver)
    run.driver.kill()  # the driver's whole session: its Python process and its JVM
    run.hold.release()
    run.cluster.wait_for(lambda: not run.cluster.executor_pids(), "the dead driver's executors ending")
    assert not run.committed(mark["batch"])
    submitted = DriverProcess(
        run.config,
        run.config.parent / "submitted-driver.log",
        [
            str(spark_home() / "bin" / "spark-submit"),
            "--master", run.cluster.url,
            "--py-files", str(run.files.helper),
            str(Path(onceflow.spark.submit.__file__)),
            "--config", str(run.config),
            "--entrypoint", run.files.entrypoint,
        ],
    )  # fmt: skip
    # spark-submit runs the application with PYSPARK_PYTHON (the executors too), and binds SPARK_LOCAL_IP
    submitted.start(env={"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"})
    try:
        run.wait_committed(mark["batch"], submitted)
        run.produce_round()
        run.finish(submitted, stopped=128 + signal.SIGTERM)  # spark-submit's JVM, ended by the signal
    finally:
        submitted.kill()
