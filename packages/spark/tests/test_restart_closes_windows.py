"""A query restarted right after the batch that read the end of input still emits the last windows.

Issue 21's stall: a broker kill failed ``latestOffset`` just after that batch committed; the restarted
query ran no batch (Spark runs a batch without new data only when the previous plan asks for it, and
a restarted query has none), so the windows the watermark had closed never came out. Real Spark,
real broker: the first run stops after its first batch, the second must emit the windows.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention
from pyspark.sql.streaming.query import StreamingQuery

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.runtime.worker.end_of_input import write_end_of_input
from onceflow.spark.job.end_of_input import end_of_input_event_time, watermark_until_end_of_input
from onceflow.testing.broker.clients import create_topic

TOPIC = "restart-windows"
START_MS = 1_790_000_000_000  # a window boundary


def _query(
    spark: SparkSession, broker: EmbeddedBroker, checkpoint: Path, trigger: str, out: list[int]
) -> StreamingQuery:
    records = (
        spark.readStream.format("onceflow-kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .load()
    )
    events = records.withColumn("event_time", end_of_input_event_time(F.col("timestamp")))
    windows = watermark_until_end_of_input(events, "event_time", "0 seconds").groupBy(
        F.window("event_time", "5 seconds")
    )
    lock = threading.Lock()

    def collect(batch: DataFrame, batch_id: int) -> None:
        with lock:
            out.extend(int(row["count"]) for row in batch.collect())

    return (
        windows.count()
        .writeStream.outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=trigger)
        .foreachBatch(collect)
        .start()
    )


def test_a_query_restarted_after_the_end_of_input_batch_emits_the_closed_windows(
    spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap_servers, TOPIC)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True})
    for i in range(10):  # 3 events in the first window, 7 in the second
        producer.produce(TOPIC, value=b"e", partition=0, timestamp=START_MS + (1000 if i < 3 else 6000))
    assert producer.flush(30) == 0
    write_end_of_input({"bootstrap.servers": broker.bootstrap_servers}, TOPIC, "test")
    checkpoint = tmp_path / "checkpoint"
    counts: list[int] = []
    # Run 1: batch 0 reads everything and the marker; the next trigger (the no-data batch that
    # would emit the windows) is a day away, and the query stops before it.
    first = _query(spark, broker, checkpoint, "1 day", counts)
    deadline = time.monotonic() + 120
    while not (checkpoint / "commits" / "0").exists():
        assert time.monotonic() < deadline, "batch 0 did not commit"
        time.sleep(0.2)
    first.stop()
    assert counts == []
    # Run 2 from the checkpoint: no record came since, yet the windows come out.
    second = _query(spark, broker, checkpoint, "1 second", counts)
    try:
        deadline = time.monotonic() + 60
        while sorted(counts) != [3, 7]:
            assert time.monotonic() < deadline, f"the closed windows never came out: {counts}"
            time.sleep(0.5)
    finally:
        second.stop()
