"""JSON access logs: one JSON object per line, as nginx (``log_format ... escape=json``), Caddy and
Traefik write them. Each field is the first of its keys the object has with a value other than null
(a dotted key is a path into nested objects, as Caddy nests ``request``):

- client ip (required): ``remote_addr``, ``client_ip``, ``request.client_ip``, ``request.remote_ip``,
  ``ClientHost``, ``remote_ip``, ``ip``;
- time (required): ``time_iso8601``, ``time_local``, ``ts``, ``StartUTC``, ``@timestamp``,
  ``timestamp``, ``time``, ``msec``: ``dd/Mon/yyyy:HH:MM:SS +hhmm``, ISO 8601 (no zone: UTC), or epoch
  seconds or milliseconds as a number or a string (as in the time-ip format, :mod:`.time_ip`);
- method and path: ``request_method``, ``method``, ``request.method``, ``RequestMethod`` and
  ``request_uri``, ``uri``, ``request.uri``, ``RequestPath``, ``path``; else a ``request`` string
  (nginx's ``$request``, ``GET /a HTTP/1.1``) split as in the httpd formats; else empty;
- status: ``status``, ``DownstreamStatus``, ``status_code``: an integer 0-999 or three digits (0 when
  absent);
- bytes: ``body_bytes_sent``, ``bytes_sent``, ``size``, ``DownstreamContentSize``, ``bytes``: a
  non-negative integer, digits or ``-`` (0 when absent);
- user agent: ``http_user_agent``, ``user_agent``, ``request.headers.User-Agent`` (Caddy: a list, the
  first is taken), ``request_User-Agent``, ``agent`` ("" when absent).

A line is checked in this order: a JSON object (else ``unrecognised``; nesting too deep for the
decoder included), the client ip, the time, the status, the byte count. Numbers keep their text
(``1795357801.123`` is exact to the millisecond); ``true`` is not a number.
"""

from __future__ import annotations

import json
from typing import Any, Final

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.errors import MalformedKind, MalformedLine, shown
from onceflow.logproducer.formats.fields import (
    MAX_BYTES,
    check_ip,
    parse_bytes,
    split_request,
    time_local_ms,
)
from onceflow.logproducer.formats.time_ip import parse_time

__all__ = ["parse_json"]

IP_KEYS: Final = ("remote_addr", "client_ip", "request.client_ip", "request.remote_ip", "ClientHost", "remote_ip", "ip")
TIME_KEYS: Final = ("time_iso8601", "time_local", "ts", "StartUTC", "@timestamp", "timestamp", "time", "msec")
METHOD_KEYS: Final = ("request_method", "method", "request.method", "RequestMethod")
PATH_KEYS: Final = ("request_uri", "uri", "request.uri", "RequestPath", "path")
STATUS_KEYS: Final = ("status", "DownstreamStatus", "status_code")
BYTES_KEYS: Final = ("body_bytes_sent", "bytes_sent", "size", "DownstreamContentSize", "bytes")
AGENT_KEYS: Final = ("http_user_agent", "user_agent", "request.headers.User-Agent", "request_User-Agent", "agent")
_MISSING: Final = object()
_JSON_TYPES: Final = {list: "array", str: "string", int: "number", bool: "boolean", type(None): "null"}


def parse_json(line: str) -> AccessEvent:
    """The event of one JSON access-log line (no newline)."""
    try:
        record = json.loads(line, parse_float=str)
    except (ValueError, RecursionError) as exc:
        raise MalformedLine(f"not a JSON object: {shown(str(exc))}") from None
    if not isinstance(record, dict):
        raise MalformedLine(f"not a JSON object: a JSON {_JSON_TYPES.get(type(record), 'value')}")
    ip = _first(record, IP_KEYS)
    if not isinstance(ip, str):
        what = "no client ip field" if ip is _MISSING else f"client ip {shown(str(ip))} is not a string"
        raise MalformedLine(f"{what} (one of {', '.join(IP_KEYS)})", MalformedKind.BAD_IP)
    check_ip(ip)
    event_time = _time_ms(_first(record, TIME_KEYS))
    method, path = _text(_first(record, METHOD_KEYS)), _text(_first(record, PATH_KEYS))
    request = record.get("request")
    if not method and not path and isinstance(request, str):
        method, path = split_request(request)
    return {
        "event_time": event_time,
        "ip": ip,
        "method": method,
        "path": path,
        "status": _status(_first(record, STATUS_KEYS)),
        "bytes": _bytes(_first(record, BYTES_KEYS)),
        "user_agent": _text(_first(record, AGENT_KEYS)),
    }


def _first(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` that ``record`` has and is not null (a dotted key walks
    nested objects)."""
    for key in keys:
        value: Any = record.get(key)
        if value is None and "." in key:
            value = record
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return value
    return _MISSING


def _text(value: Any) -> str:
    """A string field; a list (Caddy's headers) gives its first string; anything else is ""."""
    if isinstance(value, list) and value:
        value = value[0]
    return value if isinstance(value, str) else ""


def _time_ms(value: Any) -> int:
    if value is _MISSING:
        raise MalformedLine(f"no time field (one of {', '.join(TIME_KEYS)})", MalformedKind.BAD_TIMESTAMP)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        value = str(value)
    if not isinstance(value, str):
        raise MalformedLine(f"bad timestamp {shown(str(value))}", MalformedKind.BAD_TIMESTAMP)
    return time_local_ms(value) if value[2:3] == "/" else parse_time(value)


def _status(value: Any) -> int:
    if value is _MISSING:
        return 0
    if isinstance(value, str) and len(value) == 3 and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 999:
        return value
    raise MalformedLine(f"status {shown(str(value))} is not a number 0-999", MalformedKind.BAD_STATUS)


def _bytes(value: Any) -> int:
    if value is _MISSING:
        return 0
    if isinstance(value, str):
        return parse_bytes(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_BYTES:
        return value
    raise MalformedLine(f"byte count {shown(str(value))} is not a number or '-'", MalformedKind.BAD_BYTES)
