"""The replay audit: a job's query re-run as a batch over what its micro-batches read, against every sink.

Steps (:func:`~onceflow.spark.replay.audit.audit_job`):

1. the sinks' commit records name the job's last committed batch;
2. the checkpoint's offset log gives every micro-batch's range and watermark up to it
   (:mod:`.checkpoint`);
3. the job's own function runs on a bounded ``onceflow-kafka`` read of those ranges
   (:mod:`.context`, :mod:`.run`); its watermark step counts events that were behind the
   watermark of their micro-batch instead of dropping them;
4. each binding's rows are read back (:mod:`onceflow.sinks.readback`) and compared (:mod:`.compare`),
   and the sinks of each output with one another.
"""

from onceflow.spark.replay.audit import BindingAudit, JobAudit, NothingCommitted, audit_job
from onceflow.spark.replay.checkpoint import CheckpointLog, CheckpointUnreadable, ReadPlan
from onceflow.spark.replay.report import DIFFERENT, EXACT, render
from onceflow.spark.replay.run import Replay, ReplayedOutput, replay_job

__all__ = [
    "DIFFERENT",
    "EXACT",
    "BindingAudit",
    "CheckpointLog",
    "CheckpointUnreadable",
    "JobAudit",
    "NothingCommitted",
    "ReadPlan",
    "Replay",
    "ReplayedOutput",
    "audit_job",
    "render",
    "replay_job",
]
