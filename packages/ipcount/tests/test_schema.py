"""The example's output contract: its bindings carry its schema, and its Kafka records are IpCount."""

from __future__ import annotations

from onceflow.contract import DEFAULT_OUTPUT, SinkMode, ValueFormat
from onceflow.core.avro import IP_COUNT_SCHEMA
from onceflow.core.avro.arrow import avro_schema
from onceflow.core.avro.single_object import schema_fingerprint
from onceflow.ipcount.schema import (
    IP_COUNT_ARROW_SCHEMA,
    IP_COUNT_RECORD_NAME,
    ip_count_table_binding,
    ip_count_topic_binding,
)


def test_the_table_binding_upserts_by_window_and_ip_or_appends_without_keys() -> None:
    upsert = ip_count_table_binding("sqlite")
    assert (upsert.output, upsert.table, upsert.mode, upsert.keys) == (
        DEFAULT_OUTPUT,
        "ip_counts",
        SinkMode.UPSERT,
        ("window_start", "ip"),
    )
    assert upsert.schema == IP_COUNT_ARROW_SCHEMA
    append = ip_count_table_binding("pg", "other", SinkMode.APPEND)
    assert (append.table, append.keys) == ("other", ())


def test_the_topic_binding_writes_ipcount_records_keyed_by_ip() -> None:
    binding = ip_count_topic_binding("kafka", "counts")
    assert (binding.topic, binding.keys, binding.value_format) == ("counts", ("ip",), ValueFormat.AVRO)
    assert binding.record_name == IP_COUNT_RECORD_NAME
    # the writer schema a bound job derives is the IpCount record every reader of the results decodes
    derived = avro_schema(IP_COUNT_ARROW_SCHEMA, IP_COUNT_RECORD_NAME)
    assert schema_fingerprint(derived) == schema_fingerprint(IP_COUNT_SCHEMA)
