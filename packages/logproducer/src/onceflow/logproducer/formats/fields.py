"""Field values of access-log lines: client ip, ``[time_local]``, status, byte count, request line.

Each check returns the value or raises :class:`MalformedLine` with the kind of field that was wrong.
Valid ips, times and statuses repeat from line to line, so they are cached (bounded).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import UTC, datetime
from functools import lru_cache

from onceflow.logproducer.formats.errors import MalformedKind, MalformedLine, shown

__all__ = [
    "MAX_BYTES",
    "STATUSES",
    "VALID_IPS",
    "check_ip",
    "parse_bytes",
    "parse_status",
    "split_request",
    "time_local_ms",
]

#: The largest byte count an AccessEvent (an Avro long) can hold.
MAX_BYTES = (1 << 63) - 1
_CACHE_LIMIT = 100_000
#: Caches of checked values (the fast path of :mod:`.httpd` looks them up inline).
VALID_IPS: set[str] = set()
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, 1)}
_TIME = re.compile(r"([0-9]{2})/([A-Z][a-z]{2})/([0-9]{4}):([0-9]{2}):([0-9]{2}):([0-9]{2}) ([+-])([0-9]{2})([0-9]{2})")
#: nginx's ``$time_iso8601`` (``2026-11-22T14:30:01+00:00``), also with a fraction or ``Z``.
_ISO_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?:Z|([+-])([0-9]{2}):([0-9]{2}))"
)
_METHOD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def check_ip(ip: str) -> str:
    """``ip`` if it is an IPv4 or IPv6 address (as written: ``::1``, ``::ffff:1.2.3.4``), else bad_ip."""
    if ip in VALID_IPS:
        return ip
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        raise MalformedLine(f"bad client ip {shown(ip)}", MalformedKind.BAD_IP) from None
    if len(VALID_IPS) >= _CACHE_LIMIT:
        VALID_IPS.clear()
    VALID_IPS.add(ip)
    return ip


@lru_cache(maxsize=4096)
def time_local_ms(text: str) -> int:
    """Epoch milliseconds (UTC) of an access log's ``[time]``: ``dd/Mon/yyyy:HH:MM:SS +hhmm``
    (``$time_local``, ``%t``), or ISO 8601 with a UTC offset or ``Z`` (``$time_iso8601``; a fraction
    is kept to the millisecond). Any UTC offset below 24 hours is accepted (``+0530``, ``-0800``,
    ``+1400``); a time without one is ambiguous, so it is a bad timestamp."""
    parts = _time_parts(text)
    if parts is None:
        expected = "expected dd/Mon/yyyy:HH:MM:SS +hhmm or ISO 8601 with a UTC offset"
        raise MalformedLine(f"bad timestamp {shown(text)}: {expected}", MalformedKind.BAD_TIMESTAMP)
    year, month, day, hour, minute, second, offset_s, millis = parts
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise MalformedLine(f"bad timestamp {shown(text)}: {exc}", MalformedKind.BAD_TIMESTAMP) from None
    return (int(local.timestamp()) - offset_s) * 1000 + millis


def _time_parts(text: str) -> tuple[int, int, int, int, int, int, int, int] | None:
    """(year, month, day, hour, minute, second, UTC offset in seconds, milliseconds), or None when
    ``text`` is in neither form or its offset is not below 24 hours."""
    if (match := _TIME.fullmatch(text)) is not None:
        year, month, day = match[3], _MONTHS.get(match[2]), match[1]
        sign, off_hours, off_minutes, fraction = match[7], match[8], match[9], ""
    elif (match := _ISO_TIME.fullmatch(text)) is not None:
        year, month, day = match[1], int(match[2]), match[3]
        sign, off_hours, off_minutes, fraction = match[8] or "+", match[9] or "0", match[10] or "0", match[7] or ""
    else:
        return None
    if month is None or int(off_hours) > 23 or int(off_minutes) > 59:
        return None
    offset_s = (int(off_hours) * 3600 + int(off_minutes) * 60) * (1 if sign == "+" else -1)
    hour, minute, second = (int(part) for part in match.group(4, 5, 6))
    return int(year), month, int(day), hour, minute, second, offset_s, int((fraction + "000")[:3])


STATUSES: dict[str, int] = {}


def parse_status(text: str) -> int:
    """A status is any three ASCII digits (the server writes what it has; 000 and 999 included)."""
    status = STATUSES.get(text)
    if status is not None:
        return status
    if not (text.isascii() and text.isdigit()):
        raise MalformedLine(f"status {shown(text)} is not a number", MalformedKind.BAD_STATUS)
    if len(text) != 3:
        raise MalformedLine(f"status {shown(text)} is not 3 digits", MalformedKind.BAD_STATUS)
    STATUSES[text] = status = int(text)
    return status


def parse_bytes(text: str) -> int:
    """The byte count: ASCII digits, or ``-`` for none (0)."""
    if text == "-":
        return 0
    if not (text.isascii() and text.isdigit()):
        raise MalformedLine(f"byte count {shown(text)} is not a number or '-'", MalformedKind.BAD_BYTES)
    size = int(text)
    if size > MAX_BYTES:
        raise MalformedLine(f"byte count {shown(text)} is too large", MalformedKind.BAD_BYTES)
    return size


def split_request(request: str) -> tuple[str, str]:
    """``(method, path)`` of a decoded request line; never fails.

    - ``METHOD PATH PROTOCOL`` (protocol starting ``HTTP/``): the path is everything between the
      first and the last space, so a path with spaces survives;
    - ``METHOD PATH`` (HTTP/0.9, or no protocol): the path is everything after the first space;
    - ``""`` or ``-`` (a client that sent nothing, 400/408): ``("", "")``;
    - anything else (e.g. TLS bytes sent to a plain-HTTP port, ``\\x16\\x03\\x01...``): method ``""``
      and the whole decoded request as the path, so the line is still counted.
    """
    if request in ("", "-"):
        return "", ""
    first = request.find(" ")
    method = request[:first]
    if first > 0 and request[first + 1 : first + 2] not in ("", " ") and _is_method(method):
        last = request.rfind(" ")
        if last > first and request.startswith("HTTP/", last + 1):
            return method, request[first + 1 : last]
        return method, request[first + 1 :]
    return "", request


_methods: set[str] = set()


def _is_method(word: str) -> bool:
    if word in _methods:
        return True
    if _METHOD.fullmatch(word) is None:
        return False
    if len(_methods) < 1000:
        _methods.add(word)
    return True
