"""The read side of the stored tables, with the Results API's argument rules: list the tables,
page through a table's rows, and name the table a watcher follows."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa

from onceflow.consumer.exceptions import InvalidQuery, UnknownTable
from onceflow.consumer.store import ResultsStore, Row
from onceflow.consumer.tables import StoredTable, StoredTables
from onceflow.contract import SinkMode
from onceflow.core.avro.arrow import json_field, json_value

#: ListRows page sizes: the largest, and what 0 means.
MAX_ROWS_LIMIT: Final = 1_000
DEFAULT_ROWS_LIMIT: Final = 100
MAX_PAGE_TOKEN_LENGTH: Final = 4_096
TABLE_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class TableInfo:
    """A stored table and its columns (None until the table exists)."""

    table: StoredTable
    columns: pa.Schema | None


@dataclass(frozen=True)
class RowsPage:
    """One page of rows; ``next_page_token`` is empty when the page ended the table."""

    rows: list[Row]
    next_page_token: str


class TableQuery:
    """Queries over the stored tables; a bad argument raises :class:`InvalidQuery` naming it, an
    unknown table :class:`UnknownTable`.

    Pages are keyset pages: a page token holds the position of the page's last row (the key values
    of an upsert table, the insertion sequence of an append table), so a page never repeats or skips
    a row that was there when the listing started, whatever the consumer stores meanwhile (rows an
    upsert changes behind the position are not listed again).
    """

    def __init__(self, tables: StoredTables, store: ResultsStore) -> None:
        self.tables = tables
        self.store = store

    def table(self, name: str) -> StoredTable:
        """The stored table ``name``."""
        if not name:
            raise InvalidQuery("table", "must not be empty")
        if not TABLE_NAME.match(name):
            raise InvalidQuery("table", f"{name[:80]!r} is not a table name (letters, digits and _, at most 63)")
        table = self.tables.by_table(name)
        if table is None:
            raise UnknownTable(name, [t.table for t in self.tables])
        return table

    def list_tables(self) -> list[TableInfo]:
        """Every stored table, in configuration order (the IP-count results first)."""
        schemas = self.store.table_schemas()
        return [TableInfo(table, schemas.get(table.table)) for table in self.tables]

    def rows(self, name: str, limit: int, page_token: str) -> RowsPage:
        """Up to ``limit`` rows of table ``name`` after ``page_token`` (0 = :data:`DEFAULT_ROWS_LIMIT`)."""
        table = self.table(name)
        if limit < 0 or limit > MAX_ROWS_LIMIT:
            raise InvalidQuery("limit", f"must be in 1..{MAX_ROWS_LIMIT} (0 = {DEFAULT_ROWS_LIMIT}), got {limit}")
        limit = limit or DEFAULT_ROWS_LIMIT
        schema = self.store.table_schemas().get(table.table)
        after = self._decode_token(table, schema, page_token) if page_token else None
        if schema is None:
            return RowsPage([], "")
        found = self.store.table_rows(table, schema, limit + 1, after)
        if len(found) <= limit:
            return RowsPage([row for _, row in found], "")
        page = found[:limit]
        return RowsPage([row for _, row in page], self._encode_token(table, page[-1][0]))

    @staticmethod
    def _encode_token(table: StoredTable, position: tuple[Any, ...]) -> str:
        doc = {"table": table.table, "after": list(position)}
        return base64.urlsafe_b64encode(json_value(doc)).decode("ascii")

    @staticmethod
    def _decode_token(table: StoredTable, schema: pa.Schema | None, token: str) -> tuple[Any, ...]:
        invalid = InvalidQuery("page_token", f"is not a next_page_token of table {table.table!r}")
        if len(token) > MAX_PAGE_TOKEN_LENGTH:
            raise InvalidQuery("page_token", f"is longer than {MAX_PAGE_TOKEN_LENGTH} characters")
        try:
            doc = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
        except (ValueError, binascii.Error, UnicodeError):
            raise invalid from None
        if not isinstance(doc, dict) or doc.get("table") != table.table or not isinstance(doc.get("after"), list):
            raise invalid
        after: list[Any] = doc["after"]
        if table.mode is SinkMode.APPEND:
            if len(after) != 1 or not isinstance(after[0], int):
                raise invalid
            return (after[0],)
        if schema is None or len(after) != len(table.keys):
            raise invalid
        try:
            pairs = zip(table.keys, after, strict=True)
            return tuple(json_field(schema.field(key).type, value) for key, value in pairs)
        except (ValueError, TypeError, KeyError, ArithmeticError):
            raise invalid from None
