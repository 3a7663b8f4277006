"""The fault injectors of tests: a crash (exit 137, the point logged) only at the armed point, armed in a
child process by its test variable through the service's plug-in, read once at its start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from onceflow.core.faults import NO_FAULTS, installed_faults
from onceflow.testing.faults import CRASH_EXIT_CODE, CrashAt, consumer, coordinator, participant, spark
from onceflow.testing.faults.crash import crash_from_env


@pytest.fixture(autouse=True)
def fresh_lookup() -> Iterator[None]:
    installed_faults.cache_clear()
    yield
    installed_faults.cache_clear()


def test_no_variable_means_no_faults_and_an_unknown_point_is_refused() -> None:
    assert crash_from_env("ONCEFLOW_X", ("a", "b"), env={}) is NO_FAULTS
    assert crash_from_env("ONCEFLOW_X", ("a", "b"), env={"ONCEFLOW_X": "  "}) is NO_FAULTS
    crash = crash_from_env("ONCEFLOW_X", ("a", "b"), env={"ONCEFLOW_X": "b"})
    assert isinstance(crash, CrashAt) and crash.point == "b"
    crash.at("a")  # another point: nothing happens
    with pytest.raises(ValueError, match="ONCEFLOW_X='c' is not a crash point; the points are: a, b"):
        crash_from_env("ONCEFLOW_X", ("a", "b"), env={"ONCEFLOW_X": "c"})


def test_the_named_point_crashes_the_process_after_logging_it() -> None:
    code = (
        "from onceflow.core.logging import configure_logging\n"
        "from onceflow.testing.faults import CrashAt\n"
        "configure_logging()\n"
        "faults = CrashAt('b', ids={'batch': 4}, before_exit=lambda: print('before exit', flush=True))\n"
        "faults.at('a', batch=4); faults.at('b', batch=3); faults.at('b', txn='job:7', batch=4); print('alive')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == CRASH_EXIT_CODE
    assert "fault.crash point=b txn=job:7 batch=4" in result.stderr
    assert result.stdout == "before exit\n"


def test_each_service_plugin_arms_what_its_variable_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for process in ("coordinator", "participant", "consumer", "spark-sink"):
        assert installed_faults(process) is NO_FAULTS, process
    installed_faults.cache_clear()
    monkeypatch.setenv(coordinator.CRASH_ENV, "commit-logged")
    monkeypatch.setenv(participant.CRASH_ENV, "prepare-durable")
    monkeypatch.setenv(consumer.HOLD_DIR_ENV, "/nonexistent/hold")
    monkeypatch.setenv(spark.CRASH_ENV, "4")
    armed = {process: installed_faults(process) for process in ("coordinator", "participant", "consumer", "spark-sink")}
    assert repr(armed["coordinator"]) == "CrashAt('commit-logged', ids={})"
    assert repr(armed["participant"]) == "CrashAt('prepare-durable', ids={})"
    assert repr(armed["consumer"]) == "HoldAt('audit.started', directory='/nonexistent/hold')"
    assert repr(armed["spark-sink"]) == "CrashAt('commit-returned', ids={}, from_ids={'batch': 4})"
    # read once: a later change of the environment does not re-arm a running process
    monkeypatch.setenv(coordinator.CRASH_ENV, "prepare-logged")
    assert installed_faults("coordinator") is armed["coordinator"]


def test_a_bad_variable_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(coordinator.CRASH_ENV, "commit-loged")
    with pytest.raises(ValueError, match="commit-logged"):
        installed_faults("coordinator")
    monkeypatch.setenv(spark.CRASH_ENV, "last")
    with pytest.raises(ValueError, match="'last' is not a batch id"):
        installed_faults("spark-sink")


#: A Spark commit worker: it reaches the sink's point for batch 3, then 5 (batch 4 staged no row, so
#: it committed no transaction).
WORKER = """
from onceflow.core.faults import installed_faults
from onceflow.core.logging import configure_logging

configure_logging()
faults = installed_faults("spark-sink")
faults.at("commit-returned", job="j", batch=3)
print("batch 3 passed", flush=True)
faults.at("commit-returned", job="j", batch=5)
print("alive", flush=True)
"""
#: Its "driver": runs the worker (argv[1]) with more environment (argv[2:], NAME=VALUE) and waits for it.
DRIVER = """
import os, subprocess, sys

env = os.environ | dict(pair.split("=", 1) for pair in sys.argv[2:])
print(f"worker exit {subprocess.run([sys.executable, '-c', sys.argv[1]], env=env).returncode}", flush=True)
"""


def _driver(driver_env: dict[str, str], worker_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the driver in a session of its own (as ``DriverProcess`` does), with ``driver_env``."""
    env = {k: v for k, v in os.environ.items() if k != spark.CRASH_ENV} | driver_env
    return subprocess.run(
        [sys.executable, "-c", DRIVER, WORKER, *(f"{k}={v}" for k, v in worker_env.items())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
        check=False,
    )


def test_the_spark_crash_kills_the_driver_after_the_first_commit_from_its_batch() -> None:
    result = _driver({spark.CRASH_ENV: "4"}, {})
    assert result.returncode == -9, result.stdout + result.stderr
    assert "batch 3 passed" in result.stdout and "alive" not in result.stdout
    assert "fault.crash point=commit-returned job=j batch=5" in result.stderr


def test_the_spark_crash_kills_no_driver_that_did_not_arm_it() -> None:
    result = _driver({}, {spark.CRASH_ENV: "4"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["batch 3 passed", f"worker exit {CRASH_EXIT_CODE}"]
    assert "fault.driver_unknown" in result.stderr
