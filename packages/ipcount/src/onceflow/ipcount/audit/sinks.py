"""What each sink holds, as the audit compares it: the IP-count results of a Kafka topic, or of a
SQLite, PostgreSQL or Delta Lake table, read through the sinks' read-back API (:mod:`onceflow.sinks.readback`)."""

from __future__ import annotations

import abc
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from onceflow.core.kafka import TopicRecord
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_COMMITS_TOPIC
from onceflow.ipcount.audit.model import Key, SinkRows
from onceflow.ipcount.schema import ip_count_table_binding, ip_count_topic_binding
from onceflow.sinks.readback import KafkaReader, PostgresReader, Row, SqliteReader, delta_reader

_log = get_logger(__name__)


class SinkReader(abc.ABC):
    """Reads one sink's results. ``name`` is how reports call the sink."""

    def __init__(self, name: str) -> None:
        self.name = name

    @abc.abstractmethod
    def read(self) -> SinkRows:
        """Every result the sink holds (raises when the sink cannot be read)."""


def _counts(rows: Iterable[Row]) -> dict[Key, list[int]]:
    """Every stored count per ``(window_start, ip)``: more than one is a duplicate row."""
    found: dict[Key, list[int]] = defaultdict(list)
    for row in rows:
        found[(int(row["window_start"]), str(row["ip"]))].append(int(row["count"]))
    return dict(found)


class KafkaTopicReader(SinkReader):
    """The Kafka sink's topic, read with read_committed. Records upsert: the latest record per
    ``(window_start, ip)`` in offset order wins, as in the upserting sinks (keys are ips, so a key
    lives in one partition). A record that is not an IpCount is counted as unreadable."""

    def __init__(self, name: str, kafka: KafkaSettings, topic: str, *, timeout: float = 120.0) -> None:
        super().__init__(name)
        self.reader = KafkaReader(name, kafka, topic, SINK_COMMITS_TOPIC, timeout_s=timeout)
        self.topic = topic

    def read(self) -> SinkRows:
        unreadable = 0

        def skip(record: TopicRecord, error: Exception) -> None:
            nonlocal unreadable
            unreadable += 1
            if unreadable <= 5:
                _log.warning("audit.unreadable_record", sink=self.name, topic=self.topic,
                             partition=record.partition, offset=record.offset, reason=str(error))  # fmt: skip

        rows = self.reader.rows(ip_count_topic_binding(self.name, self.topic), on_undecodable=skip)
        latest = {key: counts[-1] for key, counts in _counts(rows).items()}
        return SinkRows({key: [count] for key, count in latest.items()}, unreadable)


class SqliteTableReader(SinkReader):
    """A result table (``ip_counts`` of the SQLite sink, ``results`` of the consumer store) in SQLite.
    Every row is read, so duplicate rows for a key are seen even without a primary key."""

    def __init__(self, name: str, path: str | Path, table: str = "ip_counts") -> None:
        super().__init__(name)
        self.reader = SqliteReader(name, path)
        self.table = table

    def read(self) -> SinkRows:
        return SinkRows(_counts(self.reader.rows(ip_count_table_binding(self.name, self.table))))


class PostgresTableReader(SinkReader):
    """A result table (``ip_counts`` of the PostgreSQL sink, ``results`` of the consumer store) in PostgreSQL."""

    def __init__(self, name: str, dsn: str, table: str = "ip_counts", *, connect_timeout_s: int = 10) -> None:
        super().__init__(name)
        self.reader = PostgresReader(name, dsn, connect_timeout_s=connect_timeout_s)
        self.table = table

    def read(self) -> SinkRows:
        return SinkRows(_counts(self.reader.rows(ip_count_table_binding(self.name, self.table))))


class DeltaTableReader(SinkReader):
    """A result table of a Delta sink (``<root>/<table>``), its current version read through its log."""

    def __init__(self, name: str, root: str, table: str = "ip_counts") -> None:
        super().__init__(name)
        self.root = root
        self.table = table

    def read(self) -> SinkRows:
        with delta_reader(self.name, self.root) as reader:
            return SinkRows(_counts(reader.rows(ip_count_table_binding(self.name, self.table))))
