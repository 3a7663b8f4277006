"""Ship a job file to the executors, as ``spark-submit --py-files`` does for a Python application.

A ``path/to/job.py:function`` entry point is loaded on the driver as the module
``onceflow_job_<name>``; Spark pickles the functions it defines (a ``mapInArrow`` function, a UDF) by
that module's name, so every executor's Python worker must be able to import it. The driver adds a
copy of the file under that name with ``SparkContext.addPyFile``: Spark serves it to every executor,
which puts it on its Python workers' path. (Further modules a job imports are listed in
``spark.submit.pyFiles``, as for any PySpark application.)
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from onceflow.core.logging import get_logger
from onceflow.spark.api.entrypoint import job_file, job_module_name

_log = get_logger(__name__)
#: (Spark application id, copy) of every file shipped.
_SHIPPED: set[tuple[str, Path]] = set()


@functools.cache
def _copies() -> tempfile.TemporaryDirectory[str]:
    """The folder of this driver's copies, made when it ships its first file (not on import: every
    Python worker imports this module too, and a worker that exits leaves its folder behind) and
    removed when the process exits."""
    return tempfile.TemporaryDirectory(prefix="onceflow-job-files-")


def ship_job_file(spark: SparkSession, spec: str) -> Path | None:
    """Make the job file of entry point ``spec`` importable on every executor; returns the copy shipped.

    Nothing to do for a ``module:function`` entry point (installed on the executors, or listed in
    ``spark.submit.pyFiles``). Shipping the same file again in the same session (a restarted query)
    ships nothing new.
    """
    path = job_file(spec)
    if path is None:
        return None
    copy = Path(_copies().name) / f"{job_module_name(path)}.py"
    application = spark.sparkContext.applicationId
    if (application, copy) not in _SHIPPED:
        shutil.copyfile(path, copy)
        spark.sparkContext.addPyFile(str(copy))
        _SHIPPED.add((application, copy))
        _log.info("job_file.shipped", entrypoint=spec, module=copy.stem, application=application)
    return copy
