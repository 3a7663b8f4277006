"""The replayed log against the participants' own commit records: a log behind them lost decisions.

A batch reaches a sink's commit records only after its COMMITTING decision, which moves the job's
last committed batch, was logged. So a sink that committed a batch newer than the log's last
committed batch of that job proves that the log lost its tail (an unclean leader election, a lost
replica, a topic restored from an old copy): serving on it would presume abort over decisions the
sinks already applied. Participants that cannot tell (unreachable, or a sink kind without commit
records) are skipped and named in the log: the check must not make a take-over wait for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from onceflow.contract import ParticipantRef
from onceflow.coordinator.log.refusals import REBUILD_HINT, LogRefused
from onceflow.coordinator.model import JobState
from onceflow.coordinator.participants.base import ParticipantConnector
from onceflow.core.logging import get_logger

_log = get_logger(__name__)
_MAX_THREADS: Final = 16


class LogBehindParticipants(LogRefused):
    """A sink committed a batch the log does not know was decided."""

    def __init__(self, log: str, job: str, sink: str, committed: int, logged: int) -> None:
        self.job = job
        self.sink = sink
        super().__init__(
            f"decision log ({log}) lost decisions: sink {sink!r} committed batch {committed} of job {job!r}, but the "
            f"log's last committed batch of that job is {logged}. Delete the damaged log topic, then {REBUILD_HINT}"
        )


def check_against_participants(
    log: str, jobs: Sequence[JobState], connector: ParticipantConnector, timeout: float
) -> int:
    """Raise :class:`LogBehindParticipants` if any participant of a job committed past the job's last
    committed batch in the log; returns how many (job, participant) pairs could be checked.

    Steps:
        1. Ask every participant of every job, in parallel, for its last committed batch of the job.
        2. Skip (and log) the ones that cannot tell.
        3. Compare with the job's last committed batch in the log.
    """
    pairs = [(job, ref) for job in jobs for ref in job.participants]
    if not pairs:
        return 0

    def ask(pair: tuple[JobState, ParticipantRef]) -> int | None:
        job, ref = pair
        return connector.connect(ref).last_committed(job.job, timeout)

    # Step 1
    with ThreadPoolExecutor(max_workers=min(_MAX_THREADS, len(pairs)), thread_name_prefix="log-check") as pool:
        answers = list(pool.map(ask, pairs))
    checked = 0
    for (job, ref), committed in zip(pairs, answers, strict=True):
        # Step 2
        if committed is None:
            _log.warning("recovery.participant_unchecked", job=job.job, sink=ref.name, target=ref.target)
            continue
        checked += 1
        # Step 3
        if committed > job.last_committed_batch:
            _log.error(
                "recovery.log_behind_participant",
                job=job.job,
                sink=ref.name,
                committed=committed,
                logged=job.last_committed_batch,
            )
            raise LogBehindParticipants(log, job.job, ref.name, committed, job.last_committed_batch)
    return checked
