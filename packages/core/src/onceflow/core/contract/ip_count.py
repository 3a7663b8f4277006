"""The IP-count job's output as a contract: its Arrow schema and the bindings its sinks default to.

The IP-count job is the first example job; the consumer's ``counts``/``top`` views, the demo and
the tests that stage IP-count rows without a Spark job use these.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

from onceflow.core.contract.bindings import DEFAULT_OUTPUT, SinkBinding, SinkMode, ValueFormat
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
