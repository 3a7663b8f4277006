"""The job's source: the ``onceflow-kafka`` stream of the configured topic."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.source import INITIAL_OFFSETS_OPTION
from onceflow.spark.source.decoded import ACCESS_EVENT_FIELDS_OPTION, DEAD_LETTERS_OPTION


def initial_offsets_path(settings: SparkJobSettings) -> str:
    """Where the source keeps the query's resolved initial offsets: inside the checkpoint."""
    return settings.checkpoint_location.rstrip("/") + "/onceflow/initial-offsets.json"


def source_options(settings: SparkJobSettings) -> dict[str, str]:
    """The ``onceflow-kafka`` options of the job's source (a stream, or the replay's bounded read)."""
    source = settings.source
    options = {
        "kafka.bootstrap.servers": settings.kafka.bootstrap_servers,
        "subscribe": source.topic,
        "startingOffsets": source.starting_offsets,
        "isolation.level": source.isolation_level,
        "failOnDataLoss": str(source.fail_on_data_loss).lower(),
        "fetchTimeoutMs": str(source.fetch_timeout_ms),
        "groupId": f"onceflow-spark-{settings.job}",
        INITIAL_OFFSETS_OPTION: initial_offsets_path(settings),
    }
    options.update({f"kafka.{name}": value for name, value in settings.kafka.properties.items()})
    if source.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(source.max_offsets_per_trigger)
    return options


def source_frame(spark: SparkSession, settings: SparkJobSettings) -> DataFrame:
    """The raw Kafka records of the source topic (key, value, topic, partition, offset, timestamp)."""
    return spark.readStream.format("onceflow-kafka").options(**source_options(settings)).load()


def decoded_source_frame(
    spark: SparkSession, settings: SparkJobSettings, fields: Sequence[str], dead_letters: Mapping[str, str]
) -> DataFrame:
    """The AccessEvent ``fields`` of the source topic's records, decoded by the source as it reads them;
    undecodable records go to ``dead_letters`` (see :mod:`onceflow.spark.source.decoded`)."""
    options = {
        **source_options(settings),
        ACCESS_EVENT_FIELDS_OPTION: ",".join(fields),
        DEAD_LETTERS_OPTION: json.dumps(dict(dead_letters)),
    }
    return spark.readStream.format("onceflow-kafka").options(**options).load()
