"""The IP-count views as the Results API reads them, with its argument rules."""

from __future__ import annotations

from onceflow.consumer.exceptions import InvalidQuery
from onceflow.core import defaults
from onceflow.ipcount.consumer.views import IpCountViews, ResultRow

#: The most rows GetTopIps returns.
MAX_TOP_LIMIT = 10_000
MAX_IP_LENGTH = 255


class ResultsQuery:
    """Queries over the :class:`IpCountViews`; bad arguments raise :class:`InvalidQuery` naming them.

    "Closed" windows: the store holds results, not events, so the newest window start stands in
    for the newest event time. A window is closed when ``window_end + allowed_lateness_ms`` is at
    most that: the watermark has passed it, and its count is final.
    """

    def __init__(self, views: IpCountViews, *, allowed_lateness_ms: int = defaults.ALLOWED_LATENESS_MS) -> None:
        self.views = views
        self.allowed_lateness_ms = allowed_lateness_ms

    def ip_counts(self, ip: str, window_start_from_ms: int, window_start_to_ms: int) -> list[ResultRow]:
        """Rows of ``ip`` with a window start in ``[from, to)``; ``to`` 0 means no upper bound."""
        if not ip:
            raise InvalidQuery("ip", "must not be empty")
        if len(ip) > MAX_IP_LENGTH or any(c.isspace() for c in ip):
            raise InvalidQuery("ip", f"{ip[:40]!r} is not an ip (no spaces, at most {MAX_IP_LENGTH} characters)")
        if window_start_from_ms < 0 or window_start_to_ms < 0:
            raise InvalidQuery("window_start_from_ms/window_start_to_ms", "must be >= 0 (epoch milliseconds)")
        upper = window_start_to_ms or None
        if upper is not None and window_start_from_ms > upper:
            raise InvalidQuery(
                "window_start_from_ms", f"{window_start_from_ms} is after window_start_to_ms {window_start_to_ms}"
            )
        return self.views.counts_for_ip(ip, window_start_from_ms, upper)

    def latest_closed_window(self) -> int | None:
        """The start of the newest closed window (see the class docstring), or None."""
        newest = self.views.latest_window_start()
        if newest is None:
            return None
        return self.views.latest_window_start_ending_by(newest - self.allowed_lateness_ms)

    def top_ips(self, window_start_ms: int, limit: int) -> tuple[int, list[ResultRow]]:
        """The window's start and its ``limit`` top rows by count (ties by ip); window 0 = the newest
        closed window (0 and no rows when there is none)."""
        if limit <= 0 or limit > MAX_TOP_LIMIT:
            raise InvalidQuery("limit", f"must be in 1..{MAX_TOP_LIMIT}, got {limit}")
        if window_start_ms < 0:
            raise InvalidQuery("window_start_ms", f"must be >= 0 (0 = the latest closed window), got {window_start_ms}")
        window = window_start_ms
        if window == 0:
            latest = self.latest_closed_window()
            if latest is None:
                return 0, []
            window = latest
        return window, self.views.top_ips(window, limit)
