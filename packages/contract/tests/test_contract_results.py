"""The Results API's contract values (:mod:`onceflow.contract.results`) to their messages and back:
what the consumer serves is what the :class:`ResultsClient` answers."""

from __future__ import annotations

from onceflow.contract.proto import (
    rows_page_from_proto,
    rows_page_to_proto,
    rows_update_from_proto,
    rows_update_to_proto,
    table_from_proto,
    table_to_proto,
)
from onceflow.contract.results import (
    RowsPage,
    RowsUpdate,
    TableColumn,
    TableDescription,
)


def test_tables_and_rows_round_trip_through_proto() -> None:
    table = TableDescription(
        "events", "events_topic", "upsert", ("id",), "json", True,
        (TableColumn("id", "int64", nullable=False), TableColumn("at", "timestamp[us, tz=UTC]")),
    )  # fmt: skip
    assert table_from_proto(table_to_proto(table)) == table
    assert table_from_proto(table_to_proto(TableDescription("late", "t", "append"))).created is False
    page = RowsPage(('{"id": 1, "at": "2026-01-01T00:00:00+00:00"}', '{"id": 2, "at": null}'), "token-2")
    assert rows_page_from_proto(rows_page_to_proto(page)) == page
    assert page.records() == [{"id": 1, "at": "2026-01-01T00:00:00+00:00"}, {"id": 2, "at": None}]
    update = RowsUpdate(('{"id": 3}',), {0: 12, 1: 7})
    assert rows_update_from_proto(rows_update_to_proto(update)) == update
    assert rows_update_from_proto(rows_update_to_proto(RowsUpdate((), {0: 5}))).records() == []
