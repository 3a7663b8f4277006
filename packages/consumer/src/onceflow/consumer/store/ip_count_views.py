"""The IP-count job's views over its stored table ``results``: counts of an ip, the top ips of a window."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Final

from onceflow.consumer.model import ResultRow
from onceflow.consumer.store.base import Row, TableRow
from onceflow.consumer.tables import StoredTable
from onceflow.ipcount.consumer import ip_count_table
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA

#: The views' index (the table itself is created from the IP-count schema like any stored table).
CREATE_INDEX: Final = "CREATE INDEX IF NOT EXISTS results_by_ip ON results (ip, window_start)"

SELECT_IP: Final = """
SELECT window_start, window_end, ip, count FROM results
WHERE ip = ? AND window_start >= ? AND window_start < ? ORDER BY window_start
"""

SELECT_TOP: Final = """
SELECT window_start, window_end, ip, count FROM results
WHERE window_start = ? ORDER BY count DESC, ip LIMIT ?
"""

SELECT_LATEST: Final = "SELECT MAX(window_start) FROM results"
SELECT_LATEST_ENDING_BY: Final = "SELECT MAX(window_start) FROM results WHERE window_end <= ?"
SELECT_ALL: Final = "SELECT window_start, window_end, ip, count FROM results ORDER BY window_start, ip"

#: Upper bound used for "no upper bound" on window starts (fits a signed 64-bit integer).
MAX_WINDOW_START: Final = 2**63 - 1

#: The IP-count table as stored when no topic feeds it (its views still answer, empty).
IP_COUNT_STORED: Final[StoredTable] = ip_count_table("")
#: The table's name (the rows WatchResults streams).
IP_COUNT_TABLE: Final = IP_COUNT_STORED.table


def as_table_row(row: ResultRow, table: StoredTable = IP_COUNT_STORED) -> TableRow:
    """An IP-count result as a row of the ``results`` table."""
    values = {"window_start": row.window_start, "window_end": row.window_end, "ip": row.ip, "count": row.count}
    return TableRow(table, values, IP_COUNT_ARROW_SCHEMA)


def as_result_row(row: Row) -> ResultRow:
    """A row of the ``results`` table as an IP-count result."""
    return ResultRow(int(row["window_start"]), int(row["window_end"]), str(row["ip"]), int(row["count"]))


class IpCountViews(abc.ABC):
    """The IP-count queries of a SQL store (see :class:`~onceflow.consumer.store.ResultsStore`)."""

    @abc.abstractmethod
    def _query(self, query: str, params: Sequence[object]) -> list[Any]: ...

    def counts_for_ip(self, ip: str, window_start_from: int, window_start_to: int | None) -> list[ResultRow]:
        upper = MAX_WINDOW_START if window_start_to is None else window_start_to
        return self._results(SELECT_IP, (ip, window_start_from, upper))

    def top_ips(self, window_start: int, limit: int) -> list[ResultRow]:
        return self._results(SELECT_TOP, (window_start, limit))

    def latest_window_start(self) -> int | None:
        return self._scalar(SELECT_LATEST, ())

    def latest_window_start_ending_by(self, end_limit: int) -> int | None:
        return self._scalar(SELECT_LATEST_ENDING_BY, (end_limit,))

    def all_results(self) -> list[ResultRow]:
        return self._results(SELECT_ALL, ())

    def _results(self, query: str, params: Sequence[object]) -> list[ResultRow]:
        return [ResultRow(int(s), int(e), str(ip), int(n)) for s, e, ip, n in self._query(query, params)]

    def _scalar(self, query: str, params: Sequence[object]) -> int | None:
        found = self._query(query, params)
        return None if not found or found[0][0] is None else int(found[0][0])
