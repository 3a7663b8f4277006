"""The reference lesson's minimal log: each line has only the access time and the client IP::

    1700000000123 10.0.0.7                 epoch milliseconds
    1700000000.123 10.0.0.7                epoch seconds
    2026-11-22T14:30:01.123Z 10.0.0.7      ISO 8601 (no zone: UTC)
    2026-11-22 14:30:01 10.0.0.7           date and time

Numbers are ASCII digits with an optional fraction; fractions of a millisecond are cut, and a time
after the year 9999 is a bad timestamp. The other
AccessEvent fields are empty (method, path, user agent) or 0 (status, bytes).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.errors import MalformedKind, MalformedLine, shown
from onceflow.logproducer.formats.fields import check_ip

__all__ = ["parse_time", "parse_time_ip"]

#: Numbers at or above this are epoch milliseconds, below it epoch seconds (year 5138 in seconds).
_MILLIS_FROM = 100_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NUMBER = re.compile(r"([0-9]+)(?:\.([0-9]+))?")
#: 9999-12-31T23:59:59.999Z, the last instant an ISO 8601 time can name: a later "epoch ms" is a
#: bad timestamp (it would not even fit the Avro long of AccessEvent.event_time).
MAX_EPOCH_MS = 253_402_300_799_999


def parse_time(text: str) -> int:
    """Epoch milliseconds of a "time ip" line's time."""
    number = _NUMBER.fullmatch(text)
    if number is not None:
        whole, fraction = int(number[1]), number[2] or ""
        millis = whole if whole >= _MILLIS_FROM else whole * 1000 + int((fraction + "000")[:3])
        if millis > MAX_EPOCH_MS:
            raise MalformedLine(f"bad timestamp {shown(text)}: after the year 9999", MalformedKind.BAD_TIMESTAMP)
        return millis
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MalformedLine(
            f"bad timestamp {shown(text)}: expected epoch ms/s or ISO 8601", MalformedKind.BAD_TIMESTAMP
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def parse_time_ip(line: str) -> AccessEvent:
    """The event of a "TIME IP" line (no newline)."""
    tokens = line.split()
    if len(tokens) == 3:
        tokens = [f"{tokens[0]} {tokens[1]}", tokens[2]]
    if len(tokens) != 2:
        raise MalformedLine(f"expected 'TIME IP', got {len(tokens)} fields", MalformedKind.UNRECOGNISED)
    return AccessEvent(
        event_time=parse_time(tokens[0]), ip=check_ip(tokens[1]), method="", path="", status=0, bytes=0, user_agent=""
    )
