"""The driver's SparkSession, bound to loopback by default, with onceflow's data sources registered."""

from __future__ import annotations

import logging
import os
import sys

from pyspark import SparkConf
from pyspark.sql import SparkSession

from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.checkpoint_manager import checkpoint_manager_conf
from onceflow.spark.runner.class_archive import with_class_archive
from onceflow.spark.runner.object_store import object_store_conf
from onceflow.spark.runner.topology import is_single_host
from onceflow.spark.sink import TwoPhaseCommitSink
from onceflow.spark.source import KafkaSource
from onceflow.spark.worker_logging import LEVEL_ENV

#: Defaults of every driver; anything in ``spark.conf`` (settings) wins.
DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.noDataMicroBatches.enabled": "true",
    "spark.python.worker.reuse": "true",
}
#: Defaults of a driver whose executors all run on its machine (:func:`is_single_host`): it listens on
#: loopback only. On a multi-host cluster Spark's own choice stands (the host's name), or ``spark.conf``'s.
LOOPBACK_DEFAULTS: dict[str, str] = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def register_data_sources(spark: SparkSession) -> None:
    """Make ``onceflow-kafka`` and ``onceflow-2pc`` available to ``readStream``/``writeStream``."""
    spark.dataSource.register(KafkaSource)
    spark.dataSource.register(TwoPhaseCommitSink)


#: Set by spark-submit for the Python application it launches: the port of its JVM's gateway.
_GATEWAY_ENV = "PYSPARK_GATEWAY_PORT"


def _submitted_conf() -> SparkConf | None:
    """The configuration spark-submit gave this application (its JVM's), None when not under spark-submit."""
    return SparkConf() if _GATEWAY_ENV in os.environ else None


def submitted_master() -> str:
    """The master spark-submit gave the application; PySpark's own default (``local[*]``) otherwise."""
    submitted = _submitted_conf()
    return (submitted.get("spark.master", None) if submitted is not None else None) or "local[*]"


def build_session(settings: SparkJobSettings, master: str | None = None) -> SparkSession:
    """Get (or create) the session. ``master`` None leaves it to spark-submit; else it overrides settings.

    The workers run this interpreter (``PYSPARK_PYTHON``). A driver of a single-host master binds
    loopback only. Under spark-submit, onceflow's defaults apply only to what spark-submit left unset.
    """
    submitted = _submitted_conf() if master is None else None
    effective_master = master if master is not None else submitted_master()
    single_host = is_single_host(effective_master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if single_host:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault(LEVEL_ENV, settings.log.level)
    builder = SparkSession.builder.appName(settings.spark.app_name or f"onceflow-{settings.job}")
    if master is not None:
        builder = builder.master(master)
    defaults = {
        **DEFAULTS,
        **(LOOPBACK_DEFAULTS if single_host else {}),
        **checkpoint_manager_conf(settings.checkpoint_location),
    }
    conf = {
        **{key: value for key, value in defaults.items() if submitted is None or not submitted.contains(key)},
        "spark.sql.shuffle.partitions": str(settings.spark.shuffle_partitions),
        **object_store_conf(settings, effective_master, os.environ),
        **settings.spark.conf,
    }
    if submitted is None:  # this process launches the driver's JVM (under spark-submit, it runs already)
        conf = with_class_archive(conf)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one INFO line per closed gateway connection
    register_data_sources(spark)
    return spark


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of the calling thread's JVM thread.

    PySpark pins each Python thread to a JVM thread, and ``writeStream.start()`` looks Python data
    sources up in the JVM thread's active session: a query started from a thread other than the one
    that built the session would not find ``onceflow-2pc``. (PySpark's createDataFrame does the same.)
    """
    jvm = spark._jvm
    assert jvm is not None
    SparkSession._get_j_spark_session_class(jvm).setActiveSession(spark._jsparkSession)
