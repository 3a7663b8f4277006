"""The driver's staging root and checkpoint on an object store: the start-up probe, the credentials its
Spark JVM and Python workers inherit, and Hadoop's S3A connector for a checkpoint on ``s3a://``.

- Staging (``staging_root``) is read and written by Python code only (the tasks, the commit, the
  participants), through :class:`~onceflow.contract.staging.StagingStore`. The driver probes the root at
  start and exports ``[staging.s3]`` as the standard AWS variables, so Spark's Python workers (and on
  a cluster its executors, through ``spark.executorEnv.*``) reach the same store.
- A checkpoint on ``s3a://`` or ``s3://`` is Spark's own (the JVM writes it) and needs Hadoop's S3A
  connector: ``hadoop-aws`` of PySpark's Hadoop version and the AWS SDK's S3 modules it was built with.
  ``make setup`` resolves them from Maven Central (``tools/hadoop-aws/pom.xml``) and writes their
  classpath to ``.cache/hadoop-aws/<version>/classpath.txt``; the driver takes that classpath from
  :data:`HADOOP_AWS_CLASSPATH_ENV`. S3A reads the credentials from the same AWS variables, so no
  secret ever goes into Spark's configuration in ``local`` mode.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from onceflow.contract.staging import StagingStore, install_store, parse_staging_uri, probe_staging_root
from onceflow.contract.staging.s3 import DEFAULT_REGION, S3Connection
from onceflow.core.errors import InvalidConfig
from onceflow.spark.job.settings import SparkJobSettings

#: A classpath (``:``-separated jars) holding ``hadoop-aws`` and the AWS SDK's S3 modules.
HADOOP_AWS_CLASSPATH_ENV: Final = "ONCEFLOW_HADOOP_AWS_CLASSPATH"

#: Spark settings of an ``s3a://`` checkpoint that do not depend on the store (its checkpoint manager
#: is :mod:`~onceflow.spark.runner.checkpoint_manager`'s choice).
S3A_DEFAULTS: Final[Mapping[str, str]] = {
    "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
}


def on_object_store(uri: str) -> bool:
    """True if ``uri`` names an ``s3://``/``s3a://`` location."""
    return uri.split("://", 1)[0].lower() in ("s3", "s3a")


def prepare_staging(settings: SparkJobSettings) -> StagingStore:
    """The driver's staging store, checked and shared with its Spark processes.

    Steps:
        1. Build the store from ``[staging.s3]`` (else the AWS variables) and install it as this
           process's default.
        2. Exactly-once: probe ``staging_root`` (write, read, delete; ``StagingRootUnusable``).
        3. With the staging root or the checkpoint on an object store, export the connection as the
           standard AWS variables of this process, which the Spark JVM and its workers inherit.
    """
    # Step 1
    store = StagingStore(settings.staging.s3)
    install_store(store)
    # Step 2
    if settings.guarantee == "exactly-once":
        probe_staging_root(settings.staging_root, store, service="driver")
    # Step 3
    if on_object_store(settings.staging_root) or on_object_store(settings.checkpoint_location):
        os.environ.update(store.s3.environment())
    return store


def object_store_conf(settings: SparkJobSettings, master: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """Spark settings for an object-store staging root or checkpoint (empty when there is neither).

    On a non-local master the AWS variables go to the executors as ``spark.executorEnv.*`` (Spark
    redacts the secret ones in its UI and logs). A checkpoint on S3 adds the S3A connector (see the
    module docstring) pointed at the same endpoint; :class:`InvalidConfig` names the setting when
    the connector's classpath is unknown.
    """
    checkpoint = on_object_store(settings.checkpoint_location)
    if not (checkpoint or on_object_store(settings.staging_root)):
        return {}
    connection = S3Connection.resolve(settings.staging.s3, environ)
    conf: dict[str, str] = {}
    if master is not None and not master.startswith("local"):
        conf.update({f"spark.executorEnv.{name}": value for name, value in connection.environment().items()})
    if checkpoint:
        parse_staging_uri(settings.checkpoint_location)  # a checkpoint URI staging could not read is refused here
        conf.update(S3A_DEFAULTS)
        conf.update(_s3a_endpoint(connection))
        classpath = _hadoop_aws_classpath(settings, environ)
        if classpath:
            conf["spark.driver.extraClassPath"] = classpath
            conf["spark.executor.extraClassPath"] = classpath
    return conf


def _s3a_endpoint(connection: S3Connection) -> dict[str, str]:
    if not connection.endpoint_url:
        return {"spark.hadoop.fs.s3a.endpoint.region": connection.region} if connection.region else {}
    return {
        "spark.hadoop.fs.s3a.endpoint": connection.endpoint_url,
        "spark.hadoop.fs.s3a.endpoint.region": connection.region or DEFAULT_REGION,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": str(connection.endpoint_url.startswith("https")).lower(),
        "spark.hadoop.fs.s3a.attempts.maximum": str(connection.max_attempts),
    }


def _hadoop_aws_classpath(settings: SparkJobSettings, environ: Mapping[str, str]) -> str:
    """The S3A connector's classpath: "" when the user's ``spark.conf`` already provides it."""
    user = " ".join(
        settings.spark.conf.get(key, "")
        for key in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath", "spark.executor.extraClassPath")
    )
    if "hadoop-aws" in user:
        return ""
    classpath = environ.get(HADOOP_AWS_CLASSPATH_ENV, "")
    jars = [jar for jar in classpath.split(os.pathsep) if jar]
    missing = [jar for jar in jars if not os.path.isfile(jar)]
    if not jars or missing:
        problem = f"{missing[0]} does not exist" if missing else f"${HADOOP_AWS_CLASSPATH_ENV} is not set"
        raise InvalidConfig(
            "checkpoint_location",
            f"{settings.checkpoint_location} is on an object store, which needs Hadoop's S3A connector "
            f"(hadoop-aws and the AWS SDK) on Spark's classpath, but {problem}: run 'make setup' and set "
            f"{HADOOP_AWS_CLASSPATH_ENV} to the contents of .cache/hadoop-aws/<version>/classpath.txt, or name "
            "the jars in spark.conf (spark.jars)",
        )
    return os.pathsep.join(jars)
