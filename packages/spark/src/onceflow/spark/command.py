"""``onceflow job run ENTRYPOINT`` and ``onceflow spark run``: run a job's Spark driver in the foreground;
``onceflow job audit JOB.toml ...``: audit jobs by replaying them (below, :data:`AUDIT_DESCRIPTION`).

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
from collections.abc import Sequence
from typing import Any

from onceflow.core.errors import InvalidConfig
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
    service="onceflow.spark.service:driver_service",
    config_file="services/spark-worker/spark-worker.toml",
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


AUDIT_DESCRIPTION = """\
onceflow job audit JOB.toml [JOB.toml ...] --participant-config FILE [--master URL]

Re-run each job's query as a batch over what its micro-batches read (from its checkpoint, up to the
last batch the sinks committed) and compare every sink the job binds with it, keyed or row by row, and
the sinks of each output with one another; events behind their micro-batch's watermark are reported.
Works for any job: the jobs' configs say what they read and where their outputs go, the participant
server's config where each sink is. 'onceflow audit --replay' (the IP-count example's command) is
the same audit.

Exit codes: 0 every binding of every job EXACT, 1 a difference, 2 bad arguments or configs.
"""


def register_job(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow job run ENTRYPOINT`` and ``onceflow job audit``."""
    parser = subparsers.add_parser("job", help="run or audit your own exactly-once jobs (the public job API)")
    commands = _add_run(parser, "job", JOB_COMMAND)
    audit = add_command(
        commands, "audit", help="audit jobs: replay each and compare every sink", description=AUDIT_DESCRIPTION
    )
    audit.add_argument("jobs", nargs="+", metavar="JOB.toml", help="the jobs' configs (as given to onceflow job run)")
    audit.add_argument("--participant-config", required=True, metavar="FILE",
                       help="the participant server's config: where each sink of the jobs is")  # fmt: skip
    audit.add_argument("--master", help="the Spark master (default: the first job's spark.master)")
    audit.add_argument(
        "--examples", type=int, default=5, metavar="N", help="differences listed per binding (default 5)"
    )
    archive = add_command(
        commands,
        "class-archive",
        help="write the Spark driver's JVM class archive: faster driver starts and restarts (make setup runs it)",
        description=(
            "Write the class-data-sharing archive of the Spark driver's JVM for this java and this PySpark, "
            "unless it exists (see onceflow.spark.runner.class_archive). Drivers started afterwards use it."
        ),
    )
    archive.set_defaults(func=lambda args: class_archive_command())
    audit.set_defaults(
        func=lambda args: replay_audit(args.jobs, args.participant_config, examples=args.examples, master=args.master)
    )


def class_archive_command() -> int:
    """``onceflow job class-archive``: :func:`onceflow.spark.runner.class_archive.build_command`."""
    from onceflow.spark.runner.class_archive import build_command  # PySpark: only when it runs

    return build_command()


def replay_audit(
    jobs: Sequence[str], participant_config: str | None, *, examples: int = 5, master: str | None = None
) -> int:
    """``onceflow job audit`` and its alias ``onceflow audit --replay`` (the ``onceflow.audit`` entry point
    ``replay``): the exit code of :func:`onceflow.spark.replay.cli.run_replay`.

    Raises :class:`~onceflow.core.errors.InvalidConfig` for a missing ``--participant-config`` or a
    negative ``--examples``, and (from the replay) for a job or participant config that is missing,
    not TOML or not valid.
    """
    if not participant_config:
        raise InvalidConfig("--participant-config", "is required: it says where each sink of the jobs is")
    if examples < 0:
        raise InvalidConfig("--examples", f"must be >= 0, got {examples}")
    from onceflow.spark.replay.cli import run_replay  # Spark and the readers: only when an audit runs

    return run_replay(jobs, participant_config, examples=examples, master=master)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow spark run``."""
    parser = subparsers.add_parser("spark", help="the Spark compute worker (IP-count job)")
    _add_run(parser, "spark", COMMAND)


def _add_run(parser: argparse.ArgumentParser, group: str, command: ServiceCommand) -> Any:
    """Adds ``run`` under ``parser``; returns its sub-parsers, for more commands."""
    commands = parser.add_subparsers(title=f"{group} commands", dest=f"{group}_command", required=True)
    command.add_arguments(add_command(commands, "run", help=command.help, description=__doc__))
    return commands
