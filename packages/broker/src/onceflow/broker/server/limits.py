"""Broker-wide limits on what clients may make the broker hold: bytes of partially received
requests (Kafka's ``queued.max.request.bytes``) and connections per client address (Kafka's
``max.connections.per.ip``).

Both are plain counters on the event-loop thread (no locking needed). A limit of -1 means unlimited.
"""

from __future__ import annotations

from collections import Counter


class QueuedRequestBytes:
    """Bytes of requests received but not yet complete, summed over every connection, beyond what each
    connection holds on its own budget (``queued_max_request_bytes_per_connection``).

    Guarantee: :meth:`reserve` never lets the total exceed ``limit``; the connection that would
    exceed it is refused (and closed by its caller), so hostile partial frames cannot grow memory
    past the limit while complete requests keep being served.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0

    def reserve(self, size: int) -> bool:
        """Account ``size`` more buffered bytes; False (nothing accounted) if that exceeds the limit."""
        if self.limit >= 0 and self.total + size > self.limit:
            return False
        self.total += size
        return True

    def release(self, size: int) -> None:
        """Give back bytes accounted by :meth:`reserve` (the frame completed or was dropped)."""
        self.total -= size


class ConnectionsPerIp:
    """Open connections per client host; :meth:`open` refuses one beyond ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: Counter[str] = Counter()

    def open(self, host: str) -> bool:
        """Count a new connection from ``host``; False (not counted) if it has ``limit`` already."""
        if self.limit >= 0 and self._open[host] >= self.limit:
            return False
        self._open[host] += 1
        return True

    def close(self, host: str) -> None:
        """Forget one connection counted by :meth:`open`."""
        self._open[host] -= 1
        if self._open[host] <= 0:
            del self._open[host]

    def count(self, host: str) -> int:
        """Connections open from ``host``."""
        return self._open[host]
