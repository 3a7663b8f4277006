"""The IP-count job on Apache Flink 2.3 (PyFlink), exactly-once: the anchor onceflow is measured against.

Runs in the Flink anchor's own virtualenv (``make flink-anchor`` builds it under ``.cache/flink``), not
in onceflow's: apache-flink is no dependency of the project. ``bench/flink_anchor.py`` starts it once
per run and times the run itself (a read_committed consumer on the sink topic), so this script only
says when it submitted the job and when Flink reported it RUNNING and FINISHED (JSON lines on stdout).

The job, as the issue describes Flink's side: a Kafka source read_committed, bounded at the input's
end offsets (Flink's end of input: a final watermark closes every window, then a final checkpoint
commits the last transaction), 5 s tumbling event-time windows with a 5 s watermark delay, count per
ip, an exactly-once Kafka sink (``sink.delivery-guarantee = exactly-once``), checkpoints every 5 s,
parallelism 2. Results are Avro records (``window_start``, ``window_end``, ``ip``, ``count``; window
bounds as timestamp-millis longs), the IpCount schema without the single-object header.

Decoders of the AccessEvent single-object Avro values (``C3 01``, an 8-byte schema fingerprint, the
Avro body):

- ``jvm``: Flink's own ``avro`` format reads the whole value in the JVM. Its schema comes from the
  table's columns, so the header is declared as two leading columns: a ``long`` (the Avro varint
  ``C3 01``, two bytes) and a ``double`` (8 bytes: the fingerprint), then AccessEvent's fields;
- ``python``: a PyFlink DataStream ``map`` (a Python UDF in Flink's Python workers) checks the header
  and decodes the body with fastavro, as onceflow's decoder does; event time and watermarks are
  assigned after it, and the window count runs in the JVM as SQL.

Usage (by bench/flink_anchor.py):
    .cache/flink/venv/bin/python bench/flink/ip_count_job.py --bootstrap HOST:PORT --topic T
        --end-offsets '{"0": N, "1": M}' --sink-topic S --decoder jvm|python --jars A.jar,B.jar
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import uuid
from typing import Any

ACCESS_EVENT_FIELDS = [
    {"name": "event_time", "type": "long"},
    {"name": "ip", "type": "string"},
    {"name": "method", "type": "string"},
    {"name": "path", "type": "string"},
    {"name": "status", "type": "int"},
    {"name": "bytes", "type": "long"},
    {"name": "user_agent", "type": "string"},
]


def say(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


def kafka_options(bootstrap: str, topic: str) -> str:
    return f"'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}'"


def sink_ddl(args: argparse.Namespace) -> str:
    return f"""
        CREATE TABLE ip_count_sink (
            `window_start` TIMESTAMP(3) NOT NULL, `window_end` TIMESTAMP(3) NOT NULL,
            `ip` STRING NOT NULL, `count` BIGINT NOT NULL
        ) WITH (
            {kafka_options(args.bootstrap, args.sink_topic)},
            'value.format' = 'avro',
            'sink.delivery-guarantee' = 'exactly-once',
            'sink.transactional-id-prefix' = 'flink-anchor-{uuid.uuid4().hex[:8]}',
            'properties.transaction.timeout.ms' = '60000'
        )"""


def jvm_source_ddl(args: argparse.Namespace, end_offsets: dict[int, int]) -> str:
    bounded = ";".join(f"partition:{p},offset:{o}" for p, o in sorted(end_offsets.items()))
    return f"""
        CREATE TABLE ip_count_source (
            `magic` BIGINT NOT NULL, `fingerprint` DOUBLE NOT NULL,
            `event_time` BIGINT NOT NULL, `ip` STRING NOT NULL, `method` STRING NOT NULL, `path` STRING NOT NULL,
            `status` INT NOT NULL, `bytes` BIGINT NOT NULL, `user_agent` STRING NOT NULL,
            `rowtime` AS TO_TIMESTAMP_LTZ(`event_time`, 3),
            WATERMARK FOR `rowtime` AS `rowtime` - INTERVAL '{args.lateness_ms // 1000}' SECOND
        ) WITH (
            {kafka_options(args.bootstrap, args.topic)},
            'properties.group.id' = 'flink-anchor-{uuid.uuid4().hex[:8]}',
            'properties.isolation.level' = 'read_committed',
            'scan.startup.mode' = 'earliest-offset',
            'scan.bounded.mode' = 'specific-offsets',
            'scan.bounded.specific-offsets' = '{bounded}',
            'value.format' = 'avro'
        )"""


def python_source(env: Any, t_env: Any, args: argparse.Namespace, end_offsets: dict[int, int]) -> None:
    """The source table ``ip_count_source`` (event_time, ip, rowtime) with a PyFlink decoder."""
    import fastavro
    from pyflink.common import Duration, Row, Types, WatermarkStrategy
    from pyflink.common.serialization import ByteArraySchema
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource, KafkaTopicPartition
    from pyflink.table import DataTypes, Schema

    schema = fastavro.parse_schema({"type": "record", "name": "AccessEvent", "fields": ACCESS_EVENT_FIELDS})
    header = bytes.fromhex(args.header)

    def decode(value: bytes) -> Row:
        if value[:10] != header:
            raise ValueError("not an AccessEvent single-object record")
        record = fastavro.schemaless_reader(io.BytesIO(value[10:]), schema, None)
        return Row(record["event_time"], record["ip"])

    class EventTime(TimestampAssigner):  # type: ignore[misc]
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value[0])

    stop = {KafkaTopicPartition(args.topic, p): o for p, o in end_offsets.items()}
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_topics(args.topic)
        .set_group_id(f"flink-anchor-{uuid.uuid4().hex[:8]}")
        .set_property("isolation.level", "read_committed")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.offsets(stop))
        .set_value_only_deserializer(ByteArraySchema())
        .build()
    )
    events = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "ip_count_source")
        .map(decode, output_type=Types.ROW_NAMED(["event_time", "ip"], [Types.LONG(), Types.STRING()]))
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(
                Duration.of_millis(args.lateness_ms)
            ).with_timestamp_assigner(EventTime())
        )
    )
    table = t_env.from_data_stream(
        events,
        Schema.new_builder()
        .column("event_time", DataTypes.BIGINT())
        .column("ip", DataTypes.STRING())
        .column_by_metadata("rowtime", DataTypes.TIMESTAMP_LTZ(3))
        .watermark("rowtime", "SOURCE_WATERMARK()")
        .build(),
    )
    t_env.create_temporary_view("ip_count_source", table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--end-offsets", required=True, help='JSON {"partition": end offset}')
    parser.add_argument("--sink-topic", required=True)
    parser.add_argument("--decoder", choices=("jvm", "python"), required=True)
    parser.add_argument("--header", default="", help="the single-object header (hex) the Python decoder expects")
    parser.add_argument("--jars", required=True, help="comma-separated connector jars")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--checkpoint-ms", type=int, default=5_000)
    parser.add_argument("--window-ms", type=int, default=5_000)
    parser.add_argument("--lateness-ms", type=int, default=5_000)
    args = parser.parse_args()
    end_offsets = {int(p): int(o) for p, o in json.loads(args.end_offsets).items()}

    from pyflink.common import Configuration
    from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    config = Configuration()
    config.set_string("pipeline.jars", ";".join(f"file://{jar}" for jar in args.jars.split(",")))
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    config.set_string("table.local-time-zone", "UTC")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(args.parallelism)
    env.enable_checkpointing(args.checkpoint_ms, CheckpointingMode.EXACTLY_ONCE)
    t_env = StreamTableEnvironment.create(env)
    t_env.get_config().set("table.local-time-zone", "UTC")
    say("session")
    if args.decoder == "jvm":
        t_env.execute_sql(jvm_source_ddl(args, end_offsets))
    else:
        python_source(env, t_env, args, end_offsets)
    t_env.execute_sql(sink_ddl(args))
    insert = f"""
        INSERT INTO ip_count_sink
        SELECT `window_start`, `window_end`, `ip`, COUNT(*) FROM TABLE(
            TUMBLE(TABLE ip_count_source, DESCRIPTOR(`rowtime`), INTERVAL '{args.window_ms // 1000}' SECOND))
        GROUP BY `window_start`, `window_end`, `ip`"""
    say("planning")
    result = t_env.execute_sql(insert)
    client = result.get_job_client()
    say("submitted", job=str(client.get_job_id()))
    say("running", status=wait_until_running(client))
    result.wait()
    say("finished")
    return 0


def wait_until_running(client: Any) -> str:
    """The job's status once it is RUNNING or past it (a short job may finish, and its MiniCluster stop, first)."""
    while True:
        try:
            status = str(client.get_job_status().result()).split(".")[-1]
        except Exception as exc:  # the local MiniCluster is gone: the job already ended
            return f"ended ({type(exc).__name__})"
        if status not in {"INITIALIZING", "CREATED"}:
            return status
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
