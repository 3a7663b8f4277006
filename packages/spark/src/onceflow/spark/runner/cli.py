"""``onceflow job run ENTRYPOINT`` and ``onceflow spark run``: run a job's Spark driver in the foreground.

``ENTRYPOINT`` is ``package.module:function`` or ``path/to/job.py:function`` (docs/jobs.md);
``onceflow spark run`` runs the config's ``entrypoint`` (the IP-count job by default).

Configuration comes from ``--config FILE`` (see services/spark-worker/spark-worker.toml) and
``ONCEFLOW_SPARK__*`` environment variables. ``--master`` overrides ``spark.master`` (``local[*]``
by default). On a cluster, submit :mod:`onceflow.spark.submit` with spark-submit instead.
Exit codes: 0 after SIGTERM/SIGINT, 1 when the restart attempts ran out (the last error is printed),
2 for a bad configuration, 3 when another driver took over the job (fenced).
"""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.service import add_service_arguments, run_service


def add_arguments(parser: argparse.ArgumentParser, *, with_master: bool = True) -> None:
    add_service_arguments(parser, "services/spark-worker/spark-worker.toml")
    if with_master:
        parser.add_argument("--master", help="Spark master URL (default: spark.master of the config, local[*])")
    parser.add_argument(
        "--guarantee",
        choices=["exactly-once", "at-least-once"],
        help="exactly-once (2PC sinks, the default) or the at-least-once baseline that only benchmarks use",
    )


def register_job(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow job run ENTRYPOINT``."""
    parser = subparsers.add_parser("job", help="run your own exactly-once job (the public job API)")
    commands = parser.add_subparsers(title="job commands", dest="job_command", required=True)
    run_parser = commands.add_parser(
        "run", help="run a job", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    run_parser.add_argument("entrypoint", metavar="ENTRYPOINT", help="module:function or path/to/job.py:function")
    add_arguments(run_parser)
    run_parser.set_defaults(func=run)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow spark run``."""
    parser = subparsers.add_parser("spark", help="the Spark compute worker (IP-count job)")
    commands = parser.add_subparsers(title="spark commands", dest="spark_command", required=True)
    run_parser = commands.add_parser(
        "run", help="run the IP-count job", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(run_parser)
    run_parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the settings and run the driver; returns the process exit code."""
    from onceflow.core.settings import load_settings
    from onceflow.spark.job.settings import SparkJobSettings
    from onceflow.spark.runner.driver import SparkDriverService

    def load() -> SparkJobSettings:
        overrides = {
            key: value
            for key, value in (("guarantee", args.guarantee), ("entrypoint", getattr(args, "entrypoint", None)))
            if value
        }
        return load_settings(SparkJobSettings, args.config, overrides=overrides)

    def build(settings: SparkJobSettings) -> SparkDriverService:
        master = getattr(args, "master", None)
        if master is None and not getattr(args, "from_spark_submit", False):
            master = settings.spark.master
        return SparkDriverService(settings, master=master)

    return run_service("spark", load, build, ready_file=args.ready_file)
