"""The spark-submit application file of onceflow jobs.

    spark-submit --master spark://host:7077 "$(python -c 'import onceflow.spark.submit as m; print(m.__file__)')" \
        --config /etc/onceflow/job.toml [--entrypoint my_jobs.errors:job]

The master (and every other Spark setting given to spark-submit) comes from spark-submit; the rest
as for ``onceflow spark run``, and onceflow's Spark defaults fill in only what spark-submit left
unset. Executors need the onceflow packages installed (the spark-worker image) and run
``PYSPARK_PYTHON``; a job file (``--entrypoint path/to/job.py:job``) is shipped to them, the modules
it imports go in ``--py-files``. On a multi-host master the checkpoint and the staging root must be
shared (docs/cluster.md).
"""

from __future__ import annotations

import dataclasses
import sys

from onceflow.core.service import flag
from onceflow.spark.command import COMMAND, GUARANTEE

#: The driver's command under spark-submit: no ``--master`` (spark-submit's), ``--entrypoint``.
SUBMIT_COMMAND = dataclasses.replace(
    COMMAND,
    description=__doc__ or "",
    service="onceflow.spark.service:submitted_driver_service",
    flags=(
        GUARANTEE,
        flag("--entrypoint", setting="entrypoint", help="the job's module:function (default: the config's entrypoint)"),
    ),
)


def main(argv: list[str] | None = None) -> int:
    return SUBMIT_COMMAND.main("onceflow-spark-submit", argv)


if __name__ == "__main__":
    sys.exit(main())
