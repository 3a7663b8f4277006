"""Readers of what each sink holds: the Kafka topic, result tables in SQLite or PostgreSQL."""

from __future__ import annotations

import abc
import re
import sqlite3
from collections import defaultdict
from pathlib import Path

import psycopg
from psycopg import sql

from onceflow.consumer.audit.model import Key, SinkRows
from onceflow.consumer.audit.topic import read_committed
from onceflow.core.avro import IP_COUNT_SERDE
from onceflow.core.errors import SerializationError
from onceflow.core.settings import KafkaSettings

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_table(table: str) -> str:
    if not _IDENTIFIER.match(table):
        raise ValueError(f"table name {table!r} is not a plain SQL identifier")
    return table


class SinkReader(abc.ABC):
    """Reads one sink's results. ``name`` is how reports call the sink."""

    def __init__(self, name: str) -> None:
        self.name = name

    @abc.abstractmethod
    def read(self) -> SinkRows:
        """Every result the sink holds (raises when the sink cannot be read)."""


class KafkaTopicReader(SinkReader):
    """The Kafka sink's topic, read with read_committed. Records upsert: the latest record per
    ``(window_start, ip)`` in offset order wins, as in the upserting sinks (keys are ips, so a key
    lives in one partition). A record that is not an IpCount is counted as unreadable."""

    def __init__(self, name: str, kafka: KafkaSettings, topic: str, *, timeout: float = 120.0) -> None:
        super().__init__(name)
        self.kafka = kafka
        self.topic = topic
        self.timeout = timeout

    def read(self) -> SinkRows:
        latest: dict[Key, int] = {}
        unreadable = 0
        for record in read_committed(self.kafka, self.topic, timeout=self.timeout):
            try:
                row = IP_COUNT_SERDE.decode(record.value or b"")
            except SerializationError:
                unreadable += 1
                continue
            latest[(row["window_start"], row["ip"])] = row["count"]
        return SinkRows({key: [count] for key, count in latest.items()}, unreadable)


def _collect(rows: list[tuple[object, ...]]) -> dict[Key, list[int]]:
    found: dict[Key, list[int]] = defaultdict(list)
    for window_start, ip, count in rows:
        found[(int(str(window_start)), str(ip))].append(int(str(count)))
    return dict(found)


class SqliteTableReader(SinkReader):
    """A result table (``ip_counts`` of the SQLite sink, ``results`` of the consumer store) in SQLite.
    Every row is read, so duplicate rows for a key are seen even without a primary key."""

    def __init__(self, name: str, path: str | Path, table: str = "ip_counts") -> None:
        super().__init__(name)
        self.path = Path(path)
        self.table = _check_table(table)

    def read(self) -> SinkRows:
        if not self.path.is_file():
            raise FileNotFoundError(f"SQLite database {self.path} does not exist")
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            rows = conn.execute(f"SELECT window_start, ip, count FROM {self.table}").fetchall()
        finally:
            conn.close()
        return SinkRows(_collect(rows))


class PostgresTableReader(SinkReader):
    """A result table (``ip_counts`` of the PostgreSQL sink, ``results`` of the consumer store) in PostgreSQL."""

    def __init__(self, name: str, dsn: str, table: str = "ip_counts", *, connect_timeout_s: int = 10) -> None:
        super().__init__(name)
        self.dsn = dsn
        self.table = _check_table(table)
        self.connect_timeout_s = connect_timeout_s

    def read(self) -> SinkRows:
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=self.connect_timeout_s) as conn:
            query = sql.SQL("SELECT window_start, ip, count FROM {}").format(sql.Identifier(self.table))
            rows = conn.execute(query).fetchall()
        return SinkRows(_collect(rows))
