"""The Results API's values (``results.proto``, :mod:`onceflow.contract.results`) to and from their
messages: stored tables, pages and watches of rows."""

from __future__ import annotations

from onceflow.contract.results import (
    RowsPage,
    RowsUpdate,
    TableColumn,
    TableDescription,
)
from onceflow.proto.v1 import results_pb2


def table_to_proto(table: TableDescription) -> results_pb2.StoredTable:
    columns = [results_pb2.Column(name=c.name, type=c.type, nullable=c.nullable) for c in table.columns]
    return results_pb2.StoredTable(
        table=table.table, topic=table.topic, mode=table.mode, keys=list(table.keys),
        value_format=table.value_format, created=table.created, columns=columns,
    )  # fmt: skip


def table_from_proto(message: results_pb2.StoredTable) -> TableDescription:
    return TableDescription(
        table=message.table, topic=message.topic, mode=message.mode, keys=tuple(message.keys),
        value_format=message.value_format, created=message.created,
        columns=tuple(TableColumn(c.name, c.type, c.nullable) for c in message.columns),
    )  # fmt: skip


def rows_page_to_proto(page: RowsPage) -> results_pb2.ListRowsResponse:
    rows = [results_pb2.Row(json=row) for row in page.rows]
    return results_pb2.ListRowsResponse(rows=rows, next_page_token=page.next_page_token)


def rows_page_from_proto(message: results_pb2.ListRowsResponse) -> RowsPage:
    return RowsPage(rows=tuple(row.json for row in message.rows), next_page_token=message.next_page_token)


def rows_update_to_proto(update: RowsUpdate) -> results_pb2.WatchRowsResponse:
    return results_pb2.WatchRowsResponse(
        rows=[results_pb2.Row(json=row) for row in update.rows], offsets=update.offsets
    )


def rows_update_from_proto(message: results_pb2.WatchRowsResponse) -> RowsUpdate:
    return RowsUpdate(rows=tuple(row.json for row in message.rows), offsets=dict(message.offsets))
