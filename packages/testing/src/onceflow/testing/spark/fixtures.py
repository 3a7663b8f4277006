"""Pytest fixtures for a real Spark standalone cluster, available to every package's tests (pytest11 plugin).

- Every Spark driver a test starts through PySpark gets the suite's JVM options
  (:mod:`onceflow.testing.spark.defaults`), set in this pytest process's environment when it starts.
- ``spark_cluster``: a :class:`~onceflow.testing.spark.SparkStandaloneCluster` (a master and two
  workers of 1 core and 1 GiB each, every one its own JVM on 127.0.0.1) started once per test
  module and shared by its tests. A test that kills a worker leaves it to the next test's
  ``spark_cluster``, which starts every missing worker again. On a failed test the tails of the
  master's, workers' and executors' logs are printed.

Importing this module is cheap (no PySpark import).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from onceflow.testing.spark.cluster import SparkStandaloneCluster
from onceflow.testing.spark.defaults import SUBMIT_ARGS_ENV, use_test_spark_defaults

_previous = pytest.StashKey[str | None]()


def pytest_configure(config: pytest.Config) -> None:
    """Give every Spark driver of this process and its children the suite's JVM options."""
    config.stash[_previous] = os.environ.get(SUBMIT_ARGS_ENV)
    use_test_spark_defaults()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Give the process its own ``PYSPARK_SUBMIT_ARGS`` back."""
    if _previous not in config.stash:
        return
    previous = config.stash[_previous]
    if previous is None:
        os.environ.pop(SUBMIT_ARGS_ENV, None)
    else:
        os.environ[SUBMIT_ARGS_ENV] = previous


@pytest.fixture(scope="module")
def _spark_cluster_of_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandaloneCluster]:
    with SparkStandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture
def spark_cluster(
    _spark_cluster_of_module: SparkStandaloneCluster, request: pytest.FixtureRequest
) -> Iterator[SparkStandaloneCluster]:
    """The module's standalone cluster with every worker running and ALIVE."""
    cluster = _spark_cluster_of_module
    cluster.ensure_workers()
    yield cluster
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        sys.stderr.write(f"\n--- Spark standalone cluster ({cluster.work_dir}) ---\n{cluster.logs()}\n")
