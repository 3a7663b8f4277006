"""nginx ``combined`` log format::

    $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"

e.g. ``10.0.0.7 - - [22/Nov/2026:14:30:01 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5"``.
The referer and user agent are optional (nginx's ``common`` format has neither).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from functools import lru_cache

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.errors import MalformedLine

_LINE = re.compile(
    r'^(?P<ip>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>[^"]*)" (?P<status>\d{3}) (?P<bytes>\d+|-)'
    r'(?: "(?P<referer>[^"]*)" "(?P<agent>[^"]*)")?\s*$'
)


@lru_cache(maxsize=4096)
def _epoch_ms(time_local: str) -> int:
    try:
        return int(datetime.strptime(time_local, "%d/%b/%Y:%H:%M:%S %z").timestamp() * 1000)
    except ValueError:
        raise MalformedLine(f"bad time {time_local!r}: expected dd/Mon/yyyy:HH:MM:SS +zzzz") from None


def check_ip(ip: str) -> str:
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        raise MalformedLine(f"bad client ip {ip!r}") from None
    return ip


def parse_combined(line: str) -> AccessEvent:
    match = _LINE.match(line)
    if match is None:
        raise MalformedLine('not an nginx combined line (ip - user [time] "request" status bytes "referer" "agent")')
    request = match["request"].split(" ")
    if len(request) < 2 or not request[0].isalpha():
        raise MalformedLine(f'bad request {match["request"]!r}: expected "METHOD PATH PROTOCOL"')
    size = match["bytes"]
    return AccessEvent(
        event_time=_epoch_ms(match["time"]),
        ip=check_ip(match["ip"]),
        method=request[0],
        path=request[1],
        status=int(match["status"]),
        bytes=0 if size == "-" else int(size),
        user_agent=match["agent"] or "",
    )
