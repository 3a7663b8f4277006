"""The suite's Spark driver options: set by the onceflow_spark plugin, taken by a real driver in a child."""

from __future__ import annotations

import os
import subprocess
import sys

from onceflow.testing.jars import FAST_START_JVM_OPTIONS
from onceflow.testing.spark.defaults import SUBMIT_ARGS_ENV, TEST_SUBMIT_ARGS

#: A driver in a child process (as a demo's job runs) prints its JVM's arguments.
_PRINT_JVM_ARGUMENTS = """
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", "-Donceflow.test.job=1").getOrCreate())
print(list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()))
spark.stop()
"""


def test_the_plugin_sets_the_options_for_this_process_and_its_children() -> None:
    assert os.environ[SUBMIT_ARGS_ENV] == TEST_SUBMIT_ARGS
    assert TEST_SUBMIT_ARGS.endswith(" pyspark-shell")


def test_a_driver_started_by_a_child_process_gets_them_before_its_own_options() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PRINT_JVM_ARGUMENTS],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    arguments = [line for line in result.stdout.splitlines() if line.startswith("[")][-1]
    options = [*FAST_START_JVM_OPTIONS, "-Donceflow.test.job=1"]
    positions = [arguments.find(f"'{option}'") for option in options]
    assert all(position >= 0 for position in positions), arguments
    assert positions == sorted(positions), f"the suite's options must come before the job's: {arguments}"
