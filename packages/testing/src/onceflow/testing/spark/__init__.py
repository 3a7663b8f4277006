"""A real Spark standalone cluster (master and workers from PySpark's own distribution) for tests and benches."""

from onceflow.testing.spark.cluster import (
    EXECUTOR_MAIN,
    SparkMaster,
    SparkStandaloneCluster,
    SparkWorker,
    kill_process,
    process_alive,
    spark_home,
)

__all__ = [
    "EXECUTOR_MAIN",
    "SparkMaster",
    "SparkStandaloneCluster",
    "SparkWorker",
    "kill_process",
    "process_alive",
    "spark_home",
]
