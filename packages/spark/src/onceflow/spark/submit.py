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

import argparse
import sys

from onceflow.spark.runner.cli import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="onceflow-spark-submit", description=__doc__)
    add_arguments(parser, with_master=False)
    parser.add_argument("--entrypoint", help="the job's module:function (default: the config's entrypoint)")
    args = parser.parse_args(argv)
    args.from_spark_submit = True
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
