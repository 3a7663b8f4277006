"""The IP-count job's views over its stored table ``results``: counts of an ip, the top ips of a window."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from onceflow.consumer.store import ResultsStore, Row, TableRow
from onceflow.consumer.tables import StoredTable
from onceflow.ipcount.consumer.tables import STORE_TABLE, ip_count_table
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA

#: The views' index (the table itself is created from the IP-count schema like any stored table).
INDEX: Final = ("results_by_ip", ("ip", "window_start"))

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


@dataclass(frozen=True, order=True)
class ResultRow:
    """Requests of ``ip`` in the tumbling event-time window ``[window_start, window_end)`` (epoch ms)."""

    window_start: int
    window_end: int
    ip: str
    count: int


def as_table_row(row: ResultRow, table: StoredTable = IP_COUNT_STORED) -> TableRow:
    """An IP-count result as a row of the ``results`` table."""
    values = {"window_start": row.window_start, "window_end": row.window_end, "ip": row.ip, "count": row.count}
    return TableRow(table, values, IP_COUNT_ARROW_SCHEMA)


def as_result_row(row: Row) -> ResultRow:
    """A row of the ``results`` table as an IP-count result."""
    return ResultRow(int(row["window_start"]), int(row["window_end"]), str(row["ip"]), int(row["count"]))


class IpCountViews:
    """The IP-count queries over a store's ``results`` table.

    Opening the views creates the table (so they answer, empty, when no topic feeds it) and their
    index; both are idempotent, so every process opening them may do it.
    """

    def __init__(self, store: ResultsStore) -> None:
        self.store = store
        store.prepare_table(IP_COUNT_STORED, IP_COUNT_ARROW_SCHEMA)
        name, columns = INDEX
        store.create_index(name, STORE_TABLE, columns)

    def counts_for_ip(self, ip: str, window_start_from: int, window_start_to: int | None) -> list[ResultRow]:
        """Rows of ``ip`` whose window starts in ``[from, to)`` (``to`` None: no upper bound), by window."""
        upper = MAX_WINDOW_START if window_start_to is None else window_start_to
        return self._results(SELECT_IP, (ip, window_start_from, upper))

    def top_ips(self, window_start: int, limit: int) -> list[ResultRow]:
        """The ``limit`` rows of one window with the highest counts, ties broken by ip."""
        return self._results(SELECT_TOP, (window_start, limit))

    def latest_window_start(self) -> int | None:
        """The start of the newest window in the store, or None when it is empty."""
        return self._scalar(SELECT_LATEST, ())

    def latest_window_start_ending_by(self, end_limit: int) -> int | None:
        """The start of the newest window whose ``window_end <= end_limit``, or None."""
        return self._scalar(SELECT_LATEST_ENDING_BY, (end_limit,))

    def all_results(self) -> list[ResultRow]:
        """Every IP-count row, sorted by window then ip (for audits)."""
        return self._results(SELECT_ALL, ())

    def _results(self, query: str, params: Sequence[object]) -> list[ResultRow]:
        return [ResultRow(int(s), int(e), str(ip), int(n)) for s, e, ip, n in self.store.select(query, params)]

    def _scalar(self, query: str, params: Sequence[object]) -> int | None:
        found = self.store.select(query, params)
        return None if not found or found[0][0] is None else int(found[0][0])
