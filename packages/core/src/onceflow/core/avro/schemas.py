"""The Avro schemas of onceflow's records, as declared on the wire and in staging.

``event_time``, ``window_start`` and ``window_end`` are epoch milliseconds with the
``timestamp-millis`` logical type, so other Avro readers see timestamps. The Python codecs read
them as plain ints (the logical type is not part of the schema fingerprint).
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

ACCESS_EVENT_SCHEMA: Final[dict[str, Any]] = {
    "type": "record",
    "name": "AccessEvent",
    "namespace": "io.onceflow.v1",
    "doc": "One web access-log event (one nginx line).",
    "fields": [
        {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ip", "type": "string"},
        {"name": "method", "type": "string"},
        {"name": "path", "type": "string"},
        {"name": "status", "type": "int"},
        {"name": "bytes", "type": "long"},
        {"name": "user_agent", "type": "string", "default": ""},
    ],
}

IP_COUNT_SCHEMA: Final[dict[str, Any]] = {
    "type": "record",
    "name": "IpCount",
    "namespace": "io.onceflow.v1",
    "doc": "Requests of one ip in one tumbling event-time window [window_start, window_end).",
    "fields": [
        {"name": "window_start", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "window_end", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ip", "type": "string"},
        {"name": "count", "type": "long"},
    ],
}


class AccessEvent(TypedDict):
    """A decoded AccessEvent; ``event_time`` is epoch milliseconds."""

    event_time: int
    ip: str
    method: str
    path: str
    status: int
    bytes: int
    user_agent: str


class IpCount(TypedDict):
    """A decoded IpCount; window bounds are epoch milliseconds."""

    window_start: int
    window_end: int
    ip: str
    count: int
