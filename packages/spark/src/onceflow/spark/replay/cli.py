"""``onceflow job audit`` (and its alias ``onceflow audit --replay``): replay each job's query as a
batch and compare it with every sink.

The command's front is :func:`onceflow.spark.command.replay_audit`, which imports this module only
when an audit runs (it needs Spark).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from onceflow.core.settings import load_settings
from onceflow.sinks.server.settings import ParticipantSettings
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay.audit import audit_job, check_hosted
from onceflow.spark.replay.report import render
from onceflow.spark.runner.object_store import prepare_staging
from onceflow.spark.runner.session import build_session


def run_replay(
    job_configs: Sequence[str], participant_config: str, *, examples: int = 5, master: str | None = None
) -> int:
    """Audit every job of ``job_configs`` in one Spark session; print the report; 0 when all are EXACT.

    Bad config raises :class:`~onceflow.core.errors.InvalidConfig` (the CLI exits 2 with it).

    Steps:
        1. Load the jobs' and the participant's settings; every job's outputs must be hosted there.
        2. Reach the first job's staging store as its driver does (``[staging.s3]``, else the AWS
           variables; its Spark processes inherit it), then start the session.
        3. Per job, with its own store installed (the checkpoint and the side outputs are read
           through it): replay it and compare every sink.
    """
    # Step 1
    jobs = [load_settings(SparkJobSettings, path) for path in job_configs]
    participant = load_settings(ParticipantSettings, participant_config)
    for settings in jobs:
        check_hosted(settings, participant)
    # Step 2
    prepare_staging(jobs[0])
    spark = build_session(jobs[0], master or jobs[0].spark.master)
    audits = []
    try:
        # Step 3
        for index, settings in enumerate(jobs):
            if index:
                prepare_staging(settings)
            audit = audit_job(spark, settings, participant, examples=examples)
            audits.append(audit)
            print(f"onceflow audit: job {settings.job} replayed", file=sys.stderr, flush=True)
    finally:
        spark.stop()
    sys.stdout.write(render(audits))
    sys.stdout.flush()
    return 0 if all(a.exact for a in audits) else 1
