"""The IP-count results as the consumer stores them: IpCount records upserted into ``results``."""

from __future__ import annotations

from typing import Final

from onceflow.consumer.tables import StoredTable
from onceflow.contract import SinkMode, ValueFormat
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA

#: The consumer's table of the IP-count results (read by GetIpCounts, GetTopIps, the audit and the demo).
STORE_TABLE: Final = "results"


def ip_count_table(topic: str, *, skip_undecodable: bool = False) -> StoredTable:
    """IpCount records of ``topic`` upserted by (window_start, ip) into ``results``, their epoch
    milliseconds read as integers."""
    return StoredTable(
        topic=topic,
        table=STORE_TABLE,
        mode=SinkMode.UPSERT,
        keys=("window_start", "ip"),
        value_format=ValueFormat.AVRO,
        schema=IP_COUNT_ARROW_SCHEMA,
        skip_undecodable=skip_undecodable,
        avro_logical_types=False,
    )
