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
import dataclasses
from typing import Any

from onceflow.core.service import ServiceCommand, add_command, flag

#: ``--guarantee``: every form of the driver's command has it.
GUARANTEE = flag(
    "--guarantee",
    setting="guarantee",
    choices=["exactly-once", "at-least-once"],
    help="exactly-once (2PC sinks, the default) or the at-least-once baseline that only benchmarks use",
)

#: ``onceflow spark run`` (also ``python -m onceflow.spark``): the config's entry point.
COMMAND = ServiceCommand(
    name="spark",
    help="run the IP-count job",
    description=__doc__ or "",
    config_file="services/spark-worker/spark-worker.toml",
    settings="onceflow.spark.job.settings:SparkJobSettings",
    service="onceflow.spark.service:driver_service",
    flags=(
        flag(
            "--master", setting="spark.master", help="Spark master URL (default: spark.master of the config, local[*])"
        ),
        GUARANTEE,
    ),
)

#: ``onceflow job run ENTRYPOINT``: the same driver, on the entry point named.
JOB_COMMAND = dataclasses.replace(
    COMMAND,
    help="run a job",
    flags=(
        flag(
            "entrypoint", setting="entrypoint", metavar="ENTRYPOINT", help="module:function or path/to/job.py:function"
        ),
        *COMMAND.flags,
    ),
)


def register_job(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow job run ENTRYPOINT``."""
    parser = subparsers.add_parser("job", help="run your own exactly-once job (the public job API)")
    _add_run(parser, "job", JOB_COMMAND)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow spark run``."""
    parser = subparsers.add_parser("spark", help="the Spark compute worker (IP-count job)")
    _add_run(parser, "spark", COMMAND)


def _add_run(parser: argparse.ArgumentParser, group: str, command: ServiceCommand) -> None:
    commands = parser.add_subparsers(title=f"{group} commands", dest=f"{group}_command", required=True)
    command.add_arguments(add_command(commands, "run", help=command.help, description=__doc__))
