"""The test suite's Spark driver options: every driver a test starts through PySpark, in the test's
process or in a child process (a demo's job, ``onceflow spark run``), gets a JVM that starts fast and
uses little CPU on a small machine (:data:`~onceflow.testing.jars.FAST_START_JVM_OPTIONS`).

The ``onceflow_spark`` pytest plugin (:mod:`onceflow.testing.spark.fixtures`) calls
:func:`use_test_spark_defaults` when pytest starts. The options go in ``PYSPARK_SUBMIT_ARGS``, which
PySpark hands to the ``spark-submit`` that starts a driver's JVM, as Spark's
``spark.driver.defaultJavaOptions``: Spark puts them before a job's own ``extraJavaOptions``, so a
job's settings (onceflow's class archive, a test's class-load log) still apply. Not a
``spark-defaults.conf`` in ``SPARK_CONF_DIR``: Spark puts that folder on the driver's class path, and
the JVM maps no class archive with a non-empty folder there. The benches do not load the plugin: they
measure drivers with the JVM's defaults.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import MutableMapping
from typing import Final

from onceflow.testing.jars import FAST_START_JVM_OPTIONS

#: Read by PySpark when it starts a driver's JVM (``pyspark.java_gateway``).
SUBMIT_ARGS_ENV: Final = "PYSPARK_SUBMIT_ARGS"
DRIVER_DEFAULT_JAVA_OPTIONS: Final = "spark.driver.defaultJavaOptions"
TEST_SUBMIT_ARGS: Final = shlex.join(
    ["--conf", f"{DRIVER_DEFAULT_JAVA_OPTIONS}={' '.join(FAST_START_JVM_OPTIONS)}", "pyspark-shell"]
)


def use_test_spark_defaults(environ: MutableMapping[str, str] = os.environ) -> None:
    """Give every driver PySpark starts from ``environ`` (this process's, and so its children's) the test options."""
    environ[SUBMIT_ARGS_ENV] = TEST_SUBMIT_ARGS
