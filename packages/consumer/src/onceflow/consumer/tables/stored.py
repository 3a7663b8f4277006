"""The stored tables of a consumer: which topic goes to which table, how, and with which schema."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import pyarrow as pa

from onceflow.consumer.extension import load_extensions
from onceflow.consumer.tables.columns import parse_columns
from onceflow.contract import SinkBinding, SinkMode, ValueFormat

if TYPE_CHECKING:
    from onceflow.consumer.extension import ConsumerExtension
    from onceflow.consumer.settings import ConsumerSettings

#: The name the consumer's store goes by in the sinks' table messages ("sink 'consumer', table ...").
STORE_SINK: Final = "consumer"


@dataclass(frozen=True)
class StoredTable:
    """One topic stored into one table: every record one row, upserted on ``keys`` or appended.

    ``schema`` is the declared one (the JSON columns, or an extension's table): the table is created
    from it at start. Without it (Avro), the table is created from the first record's writer
    schema. ``avro_logical_types`` False reads Avro logical types as their raw type (epoch
    milliseconds as integers).
    """

    topic: str
    table: str
    mode: SinkMode = SinkMode.APPEND
    keys: tuple[str, ...] = ()
    value_format: ValueFormat = ValueFormat.AVRO
    schema: pa.Schema | None = None
    skip_undecodable: bool = True
    avro_logical_types: bool = True

    def binding(self, schema: pa.Schema) -> SinkBinding:
        """The table as the sinks' table logic sees it, for rows of ``schema``."""
        return SinkBinding(
            sink=STORE_SINK, output=self.table, table=self.table, mode=self.mode, keys=self.keys, schema=schema
        )


class StoredTables:
    """Every stored table of a consumer, by table and by topic."""

    def __init__(self, tables: Sequence[StoredTable]) -> None:
        self._by_table = {t.table: t for t in tables}
        self._by_topic = {t.topic: t for t in tables}
        if len(self._by_table) != len(tables) or len(self._by_topic) != len(tables):
            raise ValueError("each table and each topic is stored once")

    def __iter__(self) -> Iterator[StoredTable]:
        return iter(self._by_table.values())

    def __len__(self) -> int:
        return len(self._by_table)

    @property
    def topics(self) -> list[str]:
        return list(self._by_topic)

    def by_topic(self, topic: str) -> StoredTable | None:
        return self._by_topic.get(topic)

    def by_table(self, table: str) -> StoredTable | None:
        return self._by_table.get(table)

    @classmethod
    def from_settings(
        cls, settings: ConsumerSettings, extensions: Sequence[ConsumerExtension] | None = None
    ) -> StoredTables:
        """The tables of every extension (None: the installed ones), then every ``[[tables]]`` entry."""
        if extensions is None:
            extensions = load_extensions()
        tables = [table for extension in extensions for table in extension.stored_tables(settings)]
        for entry in settings.tables:
            tables.append(
                StoredTable(
                    topic=entry.topic,
                    table=entry.table,
                    mode=SinkMode(entry.mode),
                    keys=tuple(entry.keys),
                    value_format=ValueFormat(entry.value_format),
                    schema=parse_columns(entry.table, entry.columns),
                    skip_undecodable=entry.skip_undecodable,
                )
            )
        return cls(tables)
