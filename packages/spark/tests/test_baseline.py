"""The at-least-once baseline writes any job's output as a Kafka binding would, knowing no job."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.avro import IP_COUNT_SERDE, SingleObjectSerde
from onceflow.core.avro.arrow import avro_schema
from onceflow.core.kafka import read_committed
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, IP_COUNT_RECORD_NAME
from onceflow.spark.job.baseline import at_least_once_writer
from onceflow.testing.broker.clients import create_topic

from .conftest import job_settings

ROWS = [(0, 5000, "10.0.0.1", 3), (0, 5000, "10.0.0.2", 1), (5000, 10000, "10.0.0.1", 7)]
#: The IP-count output as the job types it: four NOT NULL columns.
SCHEMA = StructType(
    [
        StructField("window_start", LongType(), nullable=False),
        StructField("window_end", LongType(), nullable=False),
        StructField("ip", StringType(), nullable=False),
        StructField("count", LongType(), nullable=False),
    ]
)


def test_the_baseline_writes_the_output_as_a_kafka_binding_would(
    spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    frame = spark.createDataFrame(ROWS, SCHEMA)
    kafka = KafkaSettings(bootstrap_servers=bootstrap)
    # keyed, and the IpCount record: every reader of the IP-count results decodes it
    create_topic(bootstrap, "counts")
    keyed = job_settings(
        bootstrap, tmp_path, sink_topic="counts", sink_keys=["ip"], sink_record_name=IP_COUNT_RECORD_NAME
    )
    at_least_once_writer(keyed)(frame, 0)
    records = list(read_committed(kafka, "counts", timeout=60))
    assert [(r.key, IP_COUNT_SERDE.decode(r.value or b"")) for r in records] == [
        (ip.encode(), {"window_start": start, "window_end": end, "ip": ip, "count": count})
        for start, end, ip, count in ROWS
    ]
    # no keys and no record name: unkeyed records of onceflow.<job>.results
    create_topic(bootstrap, "plain")
    plain = job_settings(bootstrap, tmp_path, job="plain-job", sink_topic="plain")
    at_least_once_writer(plain)(frame, 1)
    serde: SingleObjectSerde[dict[str, object]] = SingleObjectSerde(
        avro_schema(IP_COUNT_ARROW_SCHEMA, "onceflow.plain_job.results")
    )
    records = list(read_committed(kafka, "plain", timeout=60))
    assert [r.key for r in records] == [None] * len(ROWS)
    assert [serde.decode(r.value or b"")["ip"] for r in records] == [ip for _, _, ip, _ in ROWS]
