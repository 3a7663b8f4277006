"""The replay audit of one job: its query re-run as a batch, compared with every sink it binds.

onceflow job audit services/spark-worker/jobs/traffic.toml --participant-config participant.toml
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, field

import psycopg
from confluent_kafka import KafkaException
from pyspark.sql import SparkSession

from onceflow.contract import SinkBinding, SinkMode
from onceflow.core.errors import OnceflowError
from onceflow.core.logging import get_logger
from onceflow.sinks.readback import NO_BATCH, BindingReader, reader_for
from onceflow.sinks.server.settings import ParticipantSettings
from onceflow.spark.api.outputs import bindings_of
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay.checkpoint import CheckpointLog
from onceflow.spark.replay.compare import Canonical, RowComparison, canonical_rows, compare_all, compare_keyed
from onceflow.spark.replay.run import Replay, ReplayedOutput, replay_job

_log = get_logger(__name__)

#: Errors that mean "this sink cannot be read": reported per binding, the others are still audited.
SINK_READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    ValueError,
    sqlite3.Error,
    psycopg.Error,
    KafkaException,
    OnceflowError,
)


class NothingCommitted(OnceflowError):  # noqa: N818 - says what is wrong
    """No sink of the job has a committed batch: there is nothing to replay yet."""

    def __init__(self, job: str) -> None:
        super().__init__(f"job {job!r}: no sink holds a committed batch yet; run the job first")


@dataclass
class BindingAudit:
    """One binding's rows against the replay."""

    binding: SinkBinding
    last_committed: int = NO_BATCH
    #: ``keyed`` or ``every row``; empty when the rows cannot be compared (see ``error``).
    method: str = ""
    comparison: RowComparison | None = None
    error: str = ""
    held: list[Canonical] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not self.error and self.comparison is not None and self.comparison.exact


@dataclass
class JobAudit:
    """Every binding of a job against the replay of micro-batches up to ``batch``."""

    job: str
    batch: int
    replay: Replay
    bindings: list[BindingAudit] = field(default_factory=list)
    #: Per output with several sinks: whether they hold the same rows.
    agreement: dict[str, bool] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return all(b.exact for b in self.bindings) and all(self.agreement.values())


def _method(settings: SparkJobSettings, output: ReplayedOutput, binding: SinkBinding) -> tuple[str, str]:
    """How the binding's rows compare with the replay's: (method, why not comparable)."""
    every_update = settings.output_mode == "update" and output.role != "side"
    if binding.table:
        if binding.mode == SinkMode.UPSERT:
            return "keyed", ""
        if every_update:
            return "", "an update-mode output appended to a table holds every update; a replay has final rows only"
        return "every row", ""
    if not every_update:
        return "every row", ""
    if binding.keys:
        return "keyed", ""
    return "", "an update-mode output in a topic without key columns: its updates cannot be matched to final rows"


def _bindings(settings: SparkJobSettings, replay: Replay) -> list[SinkBinding]:
    """Every binding the job's ``[outputs]`` declares, in the order of its participants."""
    schemas = {name: output.schema for name, output in replay.outputs.items()}
    declared = bindings_of(settings, schemas)
    return [b for p in settings.participants for b in declared.get(p.sink, [])]


def check_hosted(settings: SparkJobSettings, participant: ParticipantSettings) -> None:
    """Raise naming the job's sinks that the participant config does not host."""
    hosted = [sink.name for sink in participant.sinks]
    missing = sorted({p.sink for p in settings.participants} - set(hosted))
    if missing:
        raise OnceflowError(
            f"job {settings.job!r} uses sink(s) {', '.join(missing)}, which the participant config does not host "
            f"(it hosts {', '.join(hosted)})"
        )


def audit_job(
    spark: SparkSession,
    settings: SparkJobSettings,
    participant: ParticipantSettings,
    *,
    examples: int = 5,
) -> JobAudit:
    """Replay the job up to its last committed batch and compare every sink of it.

    Steps:
        1. Open a reader for each participant sink the job uses (from the participant's config).
        2. The last committed batch: the highest any of those sinks recorded for the job.
        3. Plan the reads from the checkpoint's offset log and replay the query as a batch.
        4. Compare each binding's rows with its output's replayed rows (keyed or every row).
        5. Compare the sinks of each output with one another.
    """
    # Step 1
    check_hosted(settings, participant)
    configured = {sink.name: sink for sink in participant.sinks}
    readers = {p.sink: reader_for(configured[p.sink]) for p in settings.participants}
    try:
        # Step 2
        committed = {name: reader.last_committed(settings.job) for name, reader in readers.items()}
        batch = max(committed.values())
        if batch == NO_BATCH:
            raise NothingCommitted(settings.job)
        _log.info("replay.start", job=settings.job, batch=batch, sinks=",".join(readers))
        # Step 3
        plan = CheckpointLog(settings).plan(batch)
        replay = replay_job(spark, settings, plan)
        audit = JobAudit(settings.job, batch, replay)
        # Step 4
        for binding in _bindings(settings, replay):
            audit.bindings.append(
                _audit_binding(settings, replay, binding, readers[binding.sink], committed=committed, examples=examples)
            )
        # Step 5
        by_output: dict[str, list[BindingAudit]] = {}
        for checked in audit.bindings:
            if checked.method and not checked.error:
                by_output.setdefault(checked.binding.output, []).append(checked)
        for output, group in by_output.items():
            if len(group) > 1:
                audit.agreement[output] = len({_held_form(c) for c in group}) == 1
        return audit
    finally:
        for reader in readers.values():
            reader.close()


def _held_form(checked: BindingAudit) -> frozenset[tuple[Canonical, int]]:
    """What a binding holds, comparable across sinks: the last row per key, or every row counted."""
    rows = checked.held
    if checked.method == "keyed":
        schema = checked.binding.schema
        assert schema is not None
        index = [schema.names.index(k) for k in checked.binding.keys]
        rows = list({tuple(row[i] for i in index): row for row in rows}.values())
    return frozenset(Counter(rows).items())


def _audit_binding(
    settings: SparkJobSettings,
    replay: Replay,
    binding: SinkBinding,
    reader: BindingReader,
    *,
    committed: dict[str, int],
    examples: int,
) -> BindingAudit:
    checked = BindingAudit(binding, committed[binding.sink])
    output = replay.outputs.get(binding.output)
    if output is None:
        checked.error = f"the replay computed no output {binding.output!r}"
        return checked
    method, why_not = _method(settings, output, binding)
    if not method:
        checked.error = f"not comparable: {why_not}"
        return checked
    checked.method = method
    schema = output.schema
    typed = binding.with_schema(schema)
    try:
        held_rows = reader.rows(typed)
    except SINK_READ_ERRORS as exc:
        checked.error = f"cannot read: {type(exc).__name__}: {exc}"
        _log.warning("replay.sink_unreadable", job=settings.job, binding=binding.describe(), error=checked.error)
        return checked
    held = canonical_rows(schema, held_rows)
    expected = canonical_rows(schema, output.rows)
    checked.held = held
    if method == "keyed":
        checked.comparison = compare_keyed(schema, binding.keys, expected, held, examples=examples)
    else:
        checked.comparison = compare_all(schema, expected, held, examples=examples)
    return checked
