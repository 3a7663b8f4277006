"""``onceflow audit --replay``: replay each job's query as a batch and compare it with every sink.

The ``audit`` command belongs to onceflow-consumer; it finds this function through the
``onceflow.audit`` entry point ``replay`` (the replay needs Spark, the rest of the audit does not).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from onceflow.core.settings import load_settings
from onceflow.sinks.server.settings import ParticipantSettings
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay.audit import audit_job, check_hosted
from onceflow.spark.replay.report import render
from onceflow.spark.runner.session import build_session


def run_replay(
    job_configs: Sequence[str], participant_config: str, *, examples: int = 5, master: str | None = None
) -> int:
    """Audit every job of ``job_configs`` in one Spark session; print the report; 0 when all are EXACT.

    Bad config raises :class:`~onceflow.core.errors.InvalidConfig` (the CLI exits 2 with it).
    """
    jobs = [load_settings(SparkJobSettings, path) for path in job_configs]
    participant = load_settings(ParticipantSettings, participant_config)
    for settings in jobs:
        check_hosted(settings, participant)
    spark = build_session(jobs[0], master or jobs[0].spark.master)
    audits = []
    try:
        for settings in jobs:
            audit = audit_job(spark, settings, participant, examples=examples)
            audits.append(audit)
            print(f"onceflow audit: job {settings.job} replayed", file=sys.stderr, flush=True)
    finally:
        spark.stop()
    sys.stdout.write(render(audits))
    sys.stdout.flush()
    return 0 if all(a.exact for a in audits) else 1
