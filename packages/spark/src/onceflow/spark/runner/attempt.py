"""One run of the query: register the driver (exactly-once), then start the streaming query."""

from __future__ import annotations

import os
import socket

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from onceflow.contract import ParticipantRef
from onceflow.contract.clients import CoordinatorClient, WriterRegistration, retrying
from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.spark.api import JobContext, JobOutputs, load_entrypoint, outputs_of
from onceflow.spark.api.outputs import participants_with_bindings
from onceflow.spark.api.shipping import ship_job_file
from onceflow.spark.exceptions import JobDefinitionError
from onceflow.spark.job.baseline import at_least_once_writer
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.checkpoint_leftovers import remove_unfinished_first_write
from onceflow.spark.runner.session import activate
from onceflow.spark.sink.coordinator import coordinator_errors
from onceflow.spark.sink.foreach_batch import two_phase_commit_batches

_log = get_logger(__name__)


def build_outputs(spark: SparkSession, settings: SparkJobSettings) -> JobOutputs:
    """Run the job's function and check its outputs; a job that cannot run raises :class:`JobDefinitionError`.

    A job file (``path/to/job.py:function``) is shipped to the executors first (:func:`ship_job_file`).
    """
    try:
        function = load_entrypoint(settings.entrypoint)
        ship_job_file(spark, settings.entrypoint)
        context = JobContext(spark, settings)
        return outputs_of(function(context), context.side_outputs)
    except (ValueError, InvalidConfig) as exc:
        raise JobDefinitionError(settings.job, str(exc)) from None


def register_driver(settings: SparkJobSettings, participants: list[ParticipantRef] | None = None) -> WriterRegistration:
    """Make this driver the job's writer and declare the job's sinks with their bindings.

    Steps:
        1. RegisterWriter(job): a new writer epoch. From now on the calls of any earlier driver of
           the job fail as fenced.
        2. RegisterParticipants(job, epoch, sinks with bindings): the participants every batch is
           prepared on. The coordinator has each participant check its bindings first (create a
           missing table, refuse one that does not fit): a refusal is a :class:`JobDefinitionError`,
           before any batch runs.

    Both calls are retried while the coordinator is unreachable, for ``register_timeout_ms``.
    """
    coordinator = settings.coordinator
    writer_id = f"{socket.gethostname()}:{os.getpid()}"
    job, within_s, target = settings.job, coordinator.register_timeout_ms / 1000, coordinator.target
    with CoordinatorClient(target, coordinator.tls, timeout_s=coordinator.rpc_timeout_ms / 1000) as client:
        # Step 1
        with coordinator_errors("RegisterWriter", job, 0, target):
            registration = retrying(
                lambda: client.register_writer(job, writer_id, timeout_s=10),
                within_s=within_s,
                what="RegisterWriter",
                job=job,
            )
        # Step 2
        refs = participants if participants is not None else [r for p in settings.participants for r in p.refs()]
        with coordinator_errors("RegisterParticipants", job, 0, target):
            retrying(
                lambda: client.register_participants(job, registration.epoch, refs, timeout_s=10),
                within_s=within_s,
                what="RegisterParticipants",
                job=job,
                epoch=registration.epoch,
            )
    _log.info(
        "driver.registered",
        job=settings.job,
        epoch=registration.epoch,
        last_committed_batch=registration.last_committed_batch,
        writer=writer_id,
        sinks=",".join(p.name for p in refs),
    )
    return registration


def start_query(spark: SparkSession, settings: SparkJobSettings) -> StreamingQuery:
    """Start the job's query from its checkpoint with the configured guarantee.

    Steps:
        1. Build the job's outputs from its entry point and check their schemas.
        2. Exactly-once: register the driver and the bindings (:func:`register_driver`), then write
           through the ``onceflow-2pc`` sink (``foreachBatch`` in update mode, with derived outputs,
           or when the driver stages the rows: ``stage_on = "driver"``).
        3. Remove what a driver killed during the query's first offset-log write left in the
           checkpoint (:func:`remove_unfinished_first_write`: Spark refuses to start otherwise), then
           start the query with the trigger interval and the checkpoint.
    """
    activate(spark)
    # Step 1
    outputs = build_outputs(spark, settings)
    counts = outputs.frame
    # Step 2
    if settings.guarantee == "exactly-once":
        try:
            participants = participants_with_bindings(settings, outputs)
        except InvalidConfig as exc:
            raise JobDefinitionError(settings.job, str(exc)) from None
        registration = register_driver(settings, participants)
        coordinator = settings.coordinator
        options = {
            "output": outputs.name,
            "sideOutputs": ",".join(outputs.side_outputs),
            "job": settings.job,
            "coordinator": coordinator.target,
            "writerEpoch": str(registration.epoch),
            "stagingRoot": settings.staging_root,
            "rpcTimeoutMs": str(coordinator.rpc_timeout_ms),
            "tls.ca": coordinator.tls.ca,
            "tls.cert": coordinator.tls.cert,
            "tls.key": coordinator.tls.key,
            # The token of the commits (the coordinator refuses them without it, off loopback).
            "tls.token_file": coordinator.tls.token_file,
        }
        if settings.output_mode == "append" and not outputs.derived and settings.stage_on == "tasks":
            writer = counts.writeStream.format("onceflow-2pc").options(**options)
        else:  # Python streaming sinks take append only; derived outputs and the driver's staging go per micro-batch
            batches = two_phase_commit_batches(options, outputs.derived, stage_on=settings.stage_on)
            writer = counts.writeStream.foreachBatch(batches)
    else:
        writer = counts.writeStream.foreachBatch(at_least_once_writer(settings))
    # Step 3
    remove_unfinished_first_write(spark, settings.checkpoint_location, job=settings.job)
    query = (
        writer.outputMode(settings.output_mode)
        .trigger(processingTime=f"{settings.trigger_interval_ms} milliseconds")
        .option("checkpointLocation", settings.checkpoint_location)
        .queryName(settings.spark.query_name or settings.job)
        .start()
    )
    _log.info(
        "query.starting",
        job=settings.job,
        guarantee=settings.guarantee,
        entrypoint=settings.entrypoint,
        output=outputs.name,
        side_outputs=",".join(outputs.side_outputs),
        derived_outputs=",".join(outputs.derived),
        output_mode=settings.output_mode,
        checkpoint=settings.checkpoint_location,
    )
    return query
