"""The IP-count job's output as a contract: its Arrow schema, its bindings, and its job config's
``entrypoint`` and ``[outputs]``.

The consumer's ``counts``/``top`` views, the demo and the tests that stage IP-count rows without a
Spark job use these.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import pyarrow as pa

from onceflow.contract.bindings import DEFAULT_OUTPUT, SinkBinding, SinkMode, ValueFormat
from onceflow.core.topics import SINK_TOPIC

IP_COUNT_ARROW_SCHEMA: Final = pa.schema(
    [
        pa.field("window_start", pa.int64(), nullable=False),
        pa.field("window_end", pa.int64(), nullable=False),
        pa.field("ip", pa.string(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
    ]
)
IP_COUNT_TABLE: Final = "ip_counts"
#: The job's ``entrypoint`` (``onceflow job run onceflow.ipcount.job:job``).
ENTRYPOINT: Final = "onceflow.ipcount.job:job"
IP_COUNT_RECORD_NAME: Final = "io.onceflow.v1.IpCount"


def ip_count_table_binding(sink: str, table: str = IP_COUNT_TABLE, mode: SinkMode = SinkMode.UPSERT) -> SinkBinding:
    """Results upserted by (window_start, ip) into ``table`` of a SQLite or PostgreSQL connection (or,
    with ``mode`` append, every row added)."""
    return SinkBinding(
        sink=sink,
        output=DEFAULT_OUTPUT,
        table=table,
        mode=mode,
        keys=("window_start", "ip") if mode is SinkMode.UPSERT else (),
        schema=IP_COUNT_ARROW_SCHEMA,
    )


def ip_count_topic_binding(sink: str, topic: str = SINK_TOPIC, mode: SinkMode = SinkMode.UPSERT) -> SinkBinding:
    """Results as IpCount single-object Avro records keyed by ip, in ``topic`` of a Kafka connection
    (``mode`` append: split by file, not by key, over the shards of a sharded sink)."""
    return SinkBinding(
        sink=sink,
        output=DEFAULT_OUTPUT,
        topic=topic,
        mode=mode,
        keys=("ip",),
        value_format=ValueFormat.AVRO,
        record_name=IP_COUNT_RECORD_NAME,
        schema=IP_COUNT_ARROW_SCHEMA,
    )


def results_outputs(
    table_sinks: Iterable[str] = (),
    topic_sinks: Iterable[str] = (),
    *,
    table: str = IP_COUNT_TABLE,
    topic: str = SINK_TOPIC,
) -> dict[str, list[dict[str, Any]]]:
    """The job config's ``[outputs]`` of the results: upserted by (window_start, ip) into ``table`` of
    each of ``table_sinks`` (SQLite, PostgreSQL, lakehouse), and IpCount records keyed by ip in
    ``topic`` of each of ``topic_sinks`` (Kafka): what :func:`ip_count_table_binding` and
    :func:`ip_count_topic_binding` describe."""
    results: list[dict[str, Any]] = [
        {"sink": sink, "table": table, "mode": "upsert", "keys": ["window_start", "ip"]} for sink in table_sinks
    ]
    results += [
        {"sink": sink, "topic": topic, "keys": ["ip"], "value_format": "avro", "record_name": IP_COUNT_RECORD_NAME}
        for sink in topic_sinks
    ]
    return {DEFAULT_OUTPUT: results}
