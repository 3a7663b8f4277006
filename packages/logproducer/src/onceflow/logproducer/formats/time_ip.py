"""The reference lesson's minimal log: each line has only the access time and the client IP::

    1700000000123 10.0.0.7                 epoch milliseconds
    1700000000.123 10.0.0.7                epoch seconds
    2026-11-22T14:30:01.123Z 10.0.0.7      ISO 8601 (no zone: UTC)
    2026-11-22 14:30:01 10.0.0.7           date and time

The other AccessEvent fields are empty (method, path, user agent) or 0 (status, bytes).
"""

from __future__ import annotations

from datetime import UTC, datetime

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.combined import check_ip
from onceflow.logproducer.formats.errors import MalformedLine

#: Numbers at or above this are epoch milliseconds, below it epoch seconds (year 5138 in seconds).
_MILLIS_FROM = 100_000_000_000


def parse_time(text: str) -> int:
    """Epoch milliseconds of a "time ip" line's time."""
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if number < 0:
            raise MalformedLine(f"bad time {text!r}: negative")
        return int(number) if number >= _MILLIS_FROM else int(number * 1000)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MalformedLine(f"bad time {text!r}: expected epoch ms/s or ISO 8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_time_ip(line: str) -> AccessEvent:
    tokens = line.split()
    if len(tokens) == 3:
        tokens = [f"{tokens[0]} {tokens[1]}", tokens[2]]
    if len(tokens) != 2:
        raise MalformedLine(f"expected 'TIME IP', got {len(tokens)} fields")
    return AccessEvent(
        event_time=parse_time(tokens[0]), ip=check_ip(tokens[1]), method="", path="", status=0, bytes=0, user_agent=""
    )
