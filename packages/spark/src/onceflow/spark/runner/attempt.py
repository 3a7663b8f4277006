"""One run of the query: register the driver (exactly-once), then start the streaming query."""

from __future__ import annotations

import os
import socket

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from onceflow.core.logging import get_logger
from onceflow.spark.job.baseline import at_least_once_writer
from onceflow.spark.job.ip_count import ip_count_query
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.session import activate
from onceflow.spark.sink import CoordinatorClient, Participant, Registration
from onceflow.spark.sink.foreach_batch import two_phase_commit_batches

_log = get_logger(__name__)


def register_driver(settings: SparkJobSettings) -> Registration:
    """Make this driver the job's writer and declare the job's sinks.

    Steps:
        1. RegisterWriter(job): a new writer epoch. From now on the calls of any earlier driver of
           the job fail as fenced.
        2. RegisterParticipants(job, epoch, sinks): the participants every batch is prepared on.
    """
    coordinator = settings.coordinator
    writer_id = f"{socket.gethostname()}:{os.getpid()}"
    with CoordinatorClient(coordinator.target, coordinator.tls, timeout_s=coordinator.rpc_timeout_ms / 1000) as client:
        # Step 1
        registration = client.register_writer(
            settings.job, writer_id, deadline_s=coordinator.register_timeout_ms / 1000
        )
        # Step 2
        participants = [Participant(p.sink, p.target) for p in settings.participants]
        client.register_participants(
            settings.job, registration.epoch, participants, deadline_s=coordinator.register_timeout_ms / 1000
        )
    _log.info(
        "driver.registered",
        job=settings.job,
        epoch=registration.epoch,
        last_committed_batch=registration.last_committed_batch,
        writer=writer_id,
        sinks=",".join(p.sink for p in participants),
    )
    return registration


def start_query(spark: SparkSession, settings: SparkJobSettings) -> StreamingQuery:
    """Start the IP-count query from its checkpoint with the configured guarantee."""
    activate(spark)
    counts = ip_count_query(spark, settings)
    if settings.guarantee == "exactly-once":
        registration = register_driver(settings)
        coordinator = settings.coordinator
        options = {
            "job": settings.job,
            "coordinator": coordinator.target,
            "writerEpoch": str(registration.epoch),
            "stagingRoot": settings.staging_root,
            "rpcTimeoutMs": str(coordinator.rpc_timeout_ms),
            "tls.ca": coordinator.tls.ca,
            "tls.cert": coordinator.tls.cert,
            "tls.key": coordinator.tls.key,
        }
        if settings.output_mode == "append":
            writer = counts.writeStream.format("onceflow-2pc").options(**options)
        else:  # Python streaming sinks take append only; update mode goes through foreachBatch
            writer = counts.writeStream.foreachBatch(two_phase_commit_batches(options))
    else:
        writer = counts.writeStream.foreachBatch(at_least_once_writer(settings))
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
        output_mode=settings.output_mode,
        checkpoint=settings.checkpoint_location,
    )
    return query
