"""One micro-batch through two-phase commit: stage on executors, commit or abort from the driver.

Both writers of the ``onceflow-2pc`` sink (the streaming one, and the batch one that ``foreachBatch``
uses in update mode and for derived outputs) are thin adapters over these functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage

from onceflow.contract import TransactionId, TransactionOutcome
from onceflow.contract.clients import CoordinatorClient, RequestRefused, WriterFenced, retrying
from onceflow.contract.staging import StagedFile, StagingWriter, read_manifest
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.spark.exceptions import TransactionAborted
from onceflow.spark.sink.coordinator import coordinator_errors
from onceflow.spark.sink.messages import StagedFileMessage
from onceflow.spark.sink.options import SinkOptions
from onceflow.spark.sink.side_outputs import side_output_files
from onceflow.spark.worker_logging import ensure_worker_logging

_log = get_logger(__name__)
T = TypeVar("T")
#: The reason an empty batch's AbortTransaction gives (the coordinator logs it only if it aborts an
#: earlier driver's undecided attempt of the batch).
NOTHING_STAGED = "the micro-batch staged no row"
#: The partition and task attempt of the message of a file the driver staged (no task staged it).
DRIVER_PARTITION = -1


def staged_files(messages: Sequence[WriterCommitMessage | None]) -> list[StagedFile]:
    return [m.file for m in messages if isinstance(m, StagedFileMessage) and m.file is not None]


def stage_task_output(options: SinkOptions, batch: int, batches: Iterator[pa.RecordBatch]) -> StagedFileMessage:
    """Stage this task attempt's Arrow batches, as Spark hands them over, as one Arrow IPC file under
    ``<staging>/<job>/<batch>/``; a task without rows stages nothing."""
    ensure_worker_logging()
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("the onceflow-2pc writer runs inside Spark tasks only")
    rows = [b for b in batches if b.num_rows]
    staged: StagedFile | None = None
    if rows:
        # Unique per driver life (epoch) and task attempt: a re-run never replaces a file an earlier
        # attempt handed to the coordinator (a participant may still need to read it back).
        name = f"part-{context.partitionId():05d}-epoch-{options.writer_epoch}-attempt-{context.taskAttemptId()}"
        writer = StagingWriter(options.staging_root, options.job, batch)
        staged = writer.write_batches(name, rows[0].schema, rows, output=options.output)
    return StagedFileMessage(file=staged, partition=context.partitionId(), task_attempt=context.taskAttemptId())


def stage_driver_output(options: SinkOptions, batch: int, rows: pa.Table) -> StagedFileMessage:
    """Stage the rows of output ``options.output`` that the driver collected for ``batch`` (``stage_on =
    "driver"``) as one Arrow IPC file; nothing for a batch without rows.

    The name is ``driver-<output>-epoch-<epoch>``: a driver runs a batch once per epoch (a failed batch
    fails the query, and the restarted driver registers a new epoch), so it never replaces a file that
    an earlier driver handed to the coordinator.
    """
    staged: StagedFile | None = None
    if rows.num_rows:
        writer = StagingWriter(options.staging_root, options.job, batch)
        name = f"driver-{options.output}-epoch-{options.writer_epoch}"
        staged = writer.write_batches(name, rows.schema, rows.to_batches(), output=options.output)
    return StagedFileMessage(file=staged, partition=DRIVER_PARTITION, task_attempt=DRIVER_PARTITION)


def manifest_name(output: str, epoch: int) -> str:
    """The manifest of derived output ``output`` written by the driver of writer epoch ``epoch``."""
    return f"manifest-{output}-epoch-{epoch}"


def stage_derived_output(options: SinkOptions, messages: Sequence[WriterCommitMessage | None], batch: int) -> None:
    """The commit of a derived output's write: list its tasks' staged files in the output's manifest
    for this writer epoch. Nothing is committed yet: the main output's commit takes the manifest
    into the batch's transaction (:func:`commit_batch`, step 1)."""
    ensure_worker_logging()
    files = staged_files(messages)
    StagingWriter(options.staging_root, options.job, batch).write_manifest(
        manifest_name(options.output, options.writer_epoch), files
    )
    _log.info(
        "sink.derived_output_staged",
        job=options.job,
        batch=batch,
        epoch=options.writer_epoch,
        output=options.output,
        files=len(files),
        rows=sum(f.count for f in files),
    )


def derived_output_files(options: SinkOptions, batch: int) -> list[StagedFile]:
    """The files of every derived output this driver (epoch) staged for ``batch``. An earlier driver's
    manifests are ignored: its attempt of the batch either committed (the coordinator answers
    COMMITTED without reading these files) or never will."""
    files: list[StagedFile] = []
    for output in options.derived_outputs:
        listed = read_manifest(options.staging_root, options.job, batch, manifest_name(output, options.writer_epoch))
        if listed is None:
            raise RuntimeError(
                f"derived output {output!r} of {TransactionId(options.job, batch)} was not staged"
                " before the batch's commit"
            )
        files += listed
    return files


def commit_batch(
    options: SinkOptions,
    messages: Sequence[WriterCommitMessage | None],
    batch: int,
    schema: pa.Schema,
    *,
    faults: FaultInjector = NO_FAULTS,
) -> None:
    """Commit ``<job>:<batch>`` through the coordinator, exactly once.

    Steps:
        1. Collect the staged files of every task, the side outputs earlier steps staged, and the
           derived outputs staged just before (their manifests).
        2. A batch that staged nothing (no row in any output, and no derived output whose manifest
           is in the batch's directory) is not a transaction: no participant is prepared and
           nothing is logged (two-phase commit's read-only optimisation; Flink's Kafka sink commits
           no empty transaction either). A windowed job writes rows only in the batches that close
           a window, so under a short trigger that is most of its batches. The driver still calls
           AbortTransaction for it (:func:`release_empty_batch`): the coordinator checks the
           writer's epoch, so a fenced driver stops at its next batch, empty or not, and an
           attempt of the batch that an earlier driver left undecided is aborted. The sinks'
           commit records and the coordinator's last committed batch therefore name the batches
           that wrote rows. A batch with a derived output's manifest but no row gets one empty
           file from the driver and commits like any other (the coordinator then collects its
           directory), and so does an empty replay of a batch that an earlier driver committed.
        3. CommitTransaction(job, writer epoch, batch, files), on this process's open client
           (:meth:`~onceflow.contract.clients.ServiceClient.shared`: a batch pays no new
           connection): the coordinator prepares every sink
           participant, logs the decision, and commits them. CommitTransaction is idempotent per
           batch (a committed batch answers COMMITTED, an attempt under way is joined), so a call
           that found the coordinator unreachable or slow (restarting, say) is retried until the
           RPC timeout is used up.
        4. COMMITTED or COMMITTING (decided, acks in flight) is success, also for a batch that an
           earlier driver already committed (a replay after a crash): ``faults`` reaches
           ``commit-returned``, and Spark then logs the batch.
        5. ABORTED raises :class:`TransactionAborted`: Spark fails the batch, and the restart loop
           re-runs it from the checkpoint. A fenced writer raises ``WriterFencedError``.
    """
    ensure_worker_logging()
    job, epoch, txn = options.job, options.writer_epoch, TransactionId(options.job, batch)
    # Step 1
    files = staged_files(messages)
    files += side_output_files(options.staging_root, job, batch, options.side_outputs)
    files += derived_output_files(options, batch)
    # Step 2
    if not files and not options.derived_outputs and release_empty_batch(options, txn):
        return
    if not files:
        writer = StagingWriter(options.staging_root, job, batch)
        files = [writer.write_batches(f"empty-epoch-{epoch}", schema, [], output=options.output)]
    rows = sum(f.count for f in files)
    # Step 3
    started = time.monotonic()
    response = _ask_coordinator(
        options,
        "CommitTransaction",
        lambda client, timeout_s: client.commit_transaction(txn, epoch, files, timeout_s=timeout_s),
    )
    state, reason = response.state, response.reason
    # Step 4
    if state.is_commit:
        _log.info(
            "sink.batch_committed",
            job=job,
            batch=batch,
            epoch=epoch,
            txn=txn,
            state=state.value,
            files=len(files),
            rows=rows,
            commit_ms=round((time.monotonic() - started) * 1000, 1),
        )
        faults.at("commit-returned", job=job, batch=batch)
        return
    # Step 5
    _log.warning("sink.batch_aborted", job=job, batch=batch, epoch=epoch, txn=txn, reason=reason)
    raise TransactionAborted(job, batch, f"{state.value}: {reason}")


def release_empty_batch(options: SinkOptions, txn: TransactionId) -> bool:
    """Step 2 of :func:`commit_batch`: end a batch that staged nothing without a transaction.

    AbortTransaction checks the writer's epoch (a fenced writer raises ``WriterFencedError``) and
    logs nothing for a batch the coordinator never saw. Returns False when an earlier attempt of the
    batch passed its commit point (a replay that found no row this time): the caller then commits
    the batch, and the coordinator answers that attempt's outcome.
    """
    job, epoch = options.job, options.writer_epoch

    def abort(client: CoordinatorClient, timeout_s: float) -> TransactionOutcome | RequestRefused:
        try:
            return client.abort_transaction(txn, epoch, NOTHING_STAGED, timeout_s=timeout_s)
        except RequestRefused as exc:
            if isinstance(exc, WriterFenced):
                raise
            return exc

    outcome = _ask_coordinator(options, "AbortTransaction", abort)
    if isinstance(outcome, RequestRefused):
        _log.info("sink.batch_empty_replay", job=job, batch=txn.batch, epoch=epoch, txn=txn, reason=outcome.details())
        return False
    _log.info("sink.batch_empty", job=job, batch=txn.batch, epoch=epoch, txn=txn, state=outcome.state.value)
    return True


def _ask_coordinator(options: SinkOptions, operation: str, call: Callable[[CoordinatorClient, float], T]) -> T:
    """``call(client, timeout_s)`` on this process's open coordinator client
    (:meth:`~onceflow.contract.clients.ServiceClient.shared`), retried while the coordinator is
    unreachable or slow until the sink's RPC timeout is used up (idempotent calls only); a failure
    raises the driver's error for it (:func:`~onceflow.spark.sink.coordinator.coordinator_errors`)."""
    deadline = time.monotonic() + options.rpc_timeout_s
    client = CoordinatorClient.shared(options.coordinator, options.tls)
    with coordinator_errors(operation, options.job, options.writer_epoch, options.coordinator):
        return retrying(
            lambda: call(client, max(1.0, deadline - time.monotonic())),
            within_s=options.rpc_timeout_s,
            what=operation,
            job=options.job,
            epoch=options.writer_epoch,
        )


def abort_batch(options: SinkOptions, messages: Sequence[WriterCommitMessage | None], batch: int) -> None:
    """Abort ``<job>:<batch>`` (a task failed, or commit raised). Best effort: presumed abort covers a
    failure here, and a decided commit is never flipped. Staged files stay: a decided commit may
    still need them; the coordinator collects them."""
    ensure_worker_logging()
    job, epoch, txn = options.job, options.writer_epoch, TransactionId(options.job, batch)
    try:
        client = CoordinatorClient.shared(options.coordinator, options.tls)
        with coordinator_errors("AbortTransaction", job, epoch, options.coordinator):
            state = client.abort_transaction(txn, epoch, "the Spark micro-batch failed", timeout_s=30).state
    except Exception as exc:  # the batch fails either way
        _log.warning("sink.abort_failed", job=job, batch=batch, epoch=epoch, txn=txn, error=str(exc))
        return
    _log.info("sink.batch_abort", job=job, batch=batch, epoch=epoch, txn=txn, state=state.value, files=len(messages))
