r"""An independent recount of an access-log file, for the audit: lines, events, dead letters per kind,
and the count per ``(window_start, ip)``.

This is a second implementation of the tailer's line formats, written apart from
``onceflow.logproducer.formats`` on purpose (it imports nothing from it): a bug in one parser shows
up as a disagreement with the other (``tests/test_parse_agreement.py`` checks they agree). The rules,
in the order they are applied to each line:

1. Lines as the tailer hands them on: split at LF (a final line without LF is a line too); a line
   longer than ``max_line_bytes`` comes in pieces of ``max_line_bytes`` and a shorter last piece.
   A piece of ``max_line_bytes`` or more is ``too_long``. One CR before the LF is dropped; a line of
   ASCII whitespace only is ``empty``; a line that is not UTF-8 is ``not_utf8``.
2. Container log files (``container.log``; ``auto``: the file's first line that passes rule 1
   decides): Docker's json-file entries (a JSON object whose ``log`` and ``stream`` are strings;
   ``log`` without a final newline is a piece) or CRI entries (``yyyy-mm-ddT<no blank> stdout|stderr
   <tags> <text>``, tags of ASCII letters joined by ``:``, ``P`` among them for a piece). A line
   that fails rule 1 keeps its kind; one that is not an entry is ``unrecognised``. A stream's pieces
   make one line with the text of the last (not a piece), or once their text reaches
   ``max_line_bytes``. After 1000 lines, or 4 times ``max_line_bytes`` of them, with a piece
   pending, and at the end of the file, every pending piece is a line as it is. Each such line is
   then read by the rules below.
3. ``format = auto``: the file's first line that fits the httpd grammar, JSON (a line starting
   with ``{``) or ``TIME IP`` decides which is used for the whole file; lines that fit none are
   malformed.
4. httpd lines: ``ip ident user [dd/Mon/yyyy:HH:MM:SS +hhmm] "request" status bytes`` then quoted
   fields: none (common), at least 2 (combined: referer, user agent), at least 3 (nginx main).
   Four fields before the ``[time]`` whose first is ``host:port`` (Apache's ``vhost_combined``): the
   first is the virtual host. After the quoted fields, extension fields (a custom format's
   ``$request_time``, ``%D``...) separated by spaces or tabs are ignored: the first is unquoted, a
   quoted one must be closed. Inside quotes a backslash escapes the next character; ``\xHH`` is a
   byte, and the bytes are read as UTF-8 (invalid bytes kept as ``\xhh`` text). Checked in order:
   shape (an unterminated field, or a closing quote followed by neither whitespace nor the end, is
   ``bad_quoting``; else ``unrecognised``), the number of quoted fields, ip, time (``dd/Mon/yyyy:HH:MM:SS
   +hhmm``, or ISO 8601 with a UTC offset or ``Z``), status (3 digits), bytes (digits or ``-``).
5. JSON lines (``format = json``, or ``auto`` decided by a line starting with ``{``): an object;
   each field is the first key of its list in ``_JSON_KEYS`` present (a dotted key is a path into
   nested objects; a null value counts as absent). ip and time are required; method and path, else
   a ``request`` string; status an integer 0-999 or three digits (0 if absent); bytes an integer,
   digits or ``-`` (0 if absent); user agent a string, or a list's first. Checked in order: an object (else
   ``unrecognised``), ip, time, status, bytes.
6. Every event counts once in the window ``event_time - event_time % window_ms``.
"""

from __future__ import annotations

import ipaddress
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from onceflow.core import defaults
from onceflow.core.avro import AccessEvent
from onceflow.ipcount.audit.model import Key

__all__ = [
    "CONTAINER_LOGS",
    "DEAD_LETTER_KINDS",
    "FORMATS",
    "FileRecount",
    "LineScanner",
    "Rejected",
    "container_lines",
    "recount_file",
    "tailer_lines",
]

# The dead-letter kinds, the same strings as the tailer's (a test checks that both lists agree).
EMPTY: Final = "empty"
NOT_UTF8: Final = "not_utf8"
TOO_LONG: Final = "too_long"
BAD_QUOTING: Final = "bad_quoting"
BAD_TIMESTAMP: Final = "bad_timestamp"
BAD_IP: Final = "bad_ip"
BAD_STATUS: Final = "bad_status"
BAD_BYTES: Final = "bad_bytes"
UNRECOGNISED: Final = "unrecognised"
DEAD_LETTER_KINDS: Final = frozenset(
    {EMPTY, NOT_UTF8, TOO_LONG, BAD_QUOTING, BAD_TIMESTAMP, BAD_IP, BAD_STATUS, BAD_BYTES, UNRECOGNISED}
)
FORMATS: Final = ("auto", "common", "combined", "main", "json", "time-ip")
CONTAINER_LOGS: Final = ("auto", "none", "docker", "cri")
#: Lines that pass with a container-log piece pending before the pieces are lines as they are.
_HOLD_LINES = 1000
MAX_LINE_BYTES: Final = 1 << 20

_DIGITS_TEXT = "0123456789"
#: 9999-12-31T23:59:59.999Z: a later epoch-ms time is a bad timestamp.
_LAST_MS = 253_402_300_799_999
_DIGITS = frozenset(_DIGITS_TEXT)
_HEX = frozenset("0123456789abcdefABCDEF")
_METHOD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_MONTHS = {name: n for n, name in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun"), 1)} | {
    name: n for n, name in enumerate(("Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 7)
}
_ESCAPED = {'"': b'"', "\\": b"\\", "n": b"\n", "t": b"\t", "r": b"\r", "b": b"\b", "v": b"\v", "f": b"\f"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_LONG = 2**63 - 1
_MIN_FIELDS = {"common": 0, "combined": 2, "main": 3, "httpd": 0}


@dataclass(frozen=True, slots=True)
class Rejected:
    """A line the tailer dead-letters, with its kind."""

    kind: str


class _Reject(Exception):  # noqa: N818 - internal control flow
    def __init__(self, kind: str) -> None:
        self.kind = kind


def _digits(text: str) -> bool:
    return bool(text) and all(c in _DIGITS for c in text)


def _word_end(line: str, start: int) -> int:
    end = start
    while end < len(line) and not line[end].isspace():
        end += 1
    return end


def _quote_end(line: str, start: int) -> int:
    """Index of the closing quote of the field whose text starts at ``start``; checks what follows."""
    i = start
    while True:
        quote = line.find('"', i)
        if quote < 0:
            raise _Reject(BAD_QUOTING)
        backslash = line.find("\\", i, quote)
        if backslash >= 0:  # the backslash takes the next character, maybe this quote
            i = backslash + 2
            continue
        if quote + 1 < len(line) and not line[quote + 1].isspace():
            raise _Reject(BAD_QUOTING)
        return quote


def _decode(field: str) -> str:
    """Undo ``\\"``, ``\\\\``, ``\\n``-style and ``\\xHH`` escapes; bytes read as UTF-8 (backslashreplace)."""
    if "\\" not in field:
        return field
    out = bytearray()
    pos = 0
    while (i := field.find("\\", pos)) >= 0 and i + 1 < len(field):
        out += field[pos:i].encode()
        nxt = field[i + 1]
        if nxt == "x" and i + 3 < len(field) and field[i + 2] in _HEX and field[i + 3] in _HEX:
            out.append(int(field[i + 2 : i + 4], 16))
            pos = i + 4
        else:
            out += _ESCAPED.get(nxt) or ("\\" + nxt).encode()
            pos = i + 2
    out += field[pos:].encode()
    return out.decode("utf-8", "backslashreplace")


def _iso_time_ms(text: str) -> int:
    """``yyyy-mm-ddTHH:MM:SS[.f](Z|+hh:mm)`` (a fraction of 1 to 9 digits, cut to ms) to epoch ms."""
    head, zone = text[:19], text[19:]
    fraction = ""
    if zone.startswith("."):
        digits = len(zone) - len(zone[1:].lstrip(_DIGITS_TEXT)) - 1
        fraction, zone = zone[1 : 1 + digits], zone[1 + digits :]
        if not 1 <= len(fraction) <= 9:
            raise _Reject(BAD_TIMESTAMP)
    if [head[4:5], head[7:8], head[10:11], head[13:14], head[16:17]] != ["-", "-", "T", ":", ":"]:
        raise _Reject(BAD_TIMESTAMP)
    numbers = [head[0:4], head[5:7], head[8:10], head[11:13], head[14:16], head[17:19]]
    if zone == "Z":
        sign, off_h, off_m = "+", "00", "00"
    elif len(zone) == 6 and zone[0] in "+-" and zone[3] == ":":
        sign, off_h, off_m = zone[0], zone[1:3], zone[4:6]
    else:
        raise _Reject(BAD_TIMESTAMP)
    if not all(_digits(n) for n in [*numbers, off_h, off_m]) or int(off_h) > 23 or int(off_m) > 59:
        raise _Reject(BAD_TIMESTAMP)
    year, month, day, hour, minute, second = (int(n) for n in numbers)
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise _Reject(BAD_TIMESTAMP) from None
    offset = timedelta(hours=int(off_h), minutes=int(off_m))
    utc = local - offset if sign == "+" else local + offset
    return (utc - _EPOCH) // timedelta(milliseconds=1) + int(fraction.ljust(3, "0")[:3])


def _time_ms(text: str) -> int:
    """``dd/Mon/yyyy:HH:MM:SS +hhmm``, or ISO 8601 with a UTC offset (:func:`_iso_time_ms`), to epoch ms."""
    if text[4:5] == "-":
        return _iso_time_ms(text)
    if len(text) != 26 or text[2] != "/" or text[6] != "/" or text[20] != " " or text[21] not in "+-":
        raise _Reject(BAD_TIMESTAMP)
    if [text[11], text[14], text[17]] != [":", ":", ":"]:
        raise _Reject(BAD_TIMESTAMP)
    numbers = [text[0:2], text[7:11], text[12:14], text[15:17], text[18:20], text[22:24], text[24:26]]
    month = _MONTHS.get(text[3:6])
    if month is None or not all(_digits(n) for n in numbers):
        raise _Reject(BAD_TIMESTAMP)
    day, year, hour, minute, second, off_h, off_m = (int(n) for n in numbers)
    if off_h > 23 or off_m > 59:
        raise _Reject(BAD_TIMESTAMP)
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise _Reject(BAD_TIMESTAMP) from None
    offset = timedelta(hours=off_h, minutes=off_m)
    utc = local - offset if text[21] == "+" else local + offset
    return (utc - _EPOCH) // timedelta(milliseconds=1)


def _ip(text: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise _Reject(BAD_IP) from None
    return text


def _method_and_path(request: str) -> tuple[str, str]:
    if request in ("", "-"):
        return "", ""
    space = request.find(" ")
    method, rest = request[:space], request[space + 1 :]
    if space <= 0 or method[0] not in _LETTERS or not set(method) <= _METHOD_CHARS or not rest or rest[0] == " ":
        return "", request
    last = rest.rfind(" ")
    if last >= 0 and rest[last + 1 :].startswith("HTTP/"):
        return method, rest[:last]
    return method, rest


def _vhost_end(line: str) -> int:
    """Where the client field starts: after a ``host:port`` that four fields before ``[`` begin with."""
    first = _word_end(line, 0)
    host, colon, port = line[:first].rpartition(":")
    if not (host and colon and _digits(port)) or '"' in host or line[first : first + 1] != " ":
        return 0
    pos = first + 1
    for _ in range(3):
        end = _word_end(line, pos)
        if end == pos or line[end : end + 1] != " ":
            return 0
        pos = end + 1
    return first + 1 if line[pos : pos + 1] == "[" else 0


def _extension_end(line: str, pos: int) -> int:
    """Skip the extension fields from ``pos``: blank-separated, the first unquoted, quoted ones closed."""
    first = True
    while True:
        start = pos
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos == len(line):
            return pos
        if pos == start or (first and line[pos] == '"'):
            raise _Reject(UNRECOGNISED)
        pos = _quote_end(line, pos + 1) + 1 if line[pos] == '"' else _word_end(line, pos)
        first = False


def _httpd(line: str, fmt: str) -> AccessEvent:
    words = []
    pos = _vhost_end(line)
    for _ in range(3):  # ip ident user
        end = _word_end(line, pos)
        if end == pos or line[end : end + 1] != " ":
            raise _Reject(UNRECOGNISED)
        words.append(line[pos:end])
        pos = end + 1
    close = line.find("]", pos)
    if line[pos : pos + 1] != "[" or close < 0:
        raise _Reject(UNRECOGNISED)
    time_text = line[pos + 1 : close]
    if line[close + 1 : close + 3] != ' "':
        raise _Reject(UNRECOGNISED)
    end = _quote_end(line, close + 3)
    request = line[close + 3 : end]
    pos = end + 1
    status_and_bytes = []
    for _ in range(2):
        end = _word_end(line, pos + 1)
        if line[pos : pos + 1] != " " or end == pos + 1:
            raise _Reject(UNRECOGNISED)
        status_and_bytes.append(line[pos + 1 : end])
        pos = end
    quoted = []
    while line[pos : pos + 2] == ' "':
        end = _quote_end(line, pos + 2)
        quoted.append(line[pos + 2 : end])
        pos = end + 1
    _extension_end(line, pos)
    n = len(quoted)
    if (n != 0) if fmt == "common" else (n == 1 or n < _MIN_FIELDS[fmt]):
        raise _Reject(UNRECOGNISED)
    ip = _ip(words[0])
    event_time = _time_ms(time_text)
    status_text, bytes_text = status_and_bytes
    if len(status_text) != 3 or not _digits(status_text):
        raise _Reject(BAD_STATUS)
    if bytes_text != "-" and not (_digits(bytes_text) and int(bytes_text) <= _MAX_LONG):
        raise _Reject(BAD_BYTES)
    method, path = _method_and_path(_decode(request))
    return AccessEvent(
        event_time=event_time,
        ip=ip,
        method=method,
        path=path,
        status=int(status_text),
        bytes=0 if bytes_text == "-" else int(bytes_text),
        user_agent=_decode(quoted[1]) if n >= 2 else "",
    )


def _epoch_or_iso_ms(text: str) -> int:
    """Epoch ms or s (digits, an optional fraction), or ISO 8601 (no zone: UTC), to epoch ms."""
    whole, dot, fraction = text.partition(".")
    if _digits(whole) and (not dot or _digits(fraction)):
        millis = int(whole) if int(whole) >= 10**11 else int(whole) * 1000 + int(fraction.ljust(3, "0")[:3])
        if millis > _LAST_MS:
            raise _Reject(BAD_TIMESTAMP)
        return millis
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _Reject(BAD_TIMESTAMP) from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _time_ip(line: str) -> AccessEvent:
    words = line.split()
    if len(words) == 3:
        words = [words[0] + " " + words[1], words[2]]
    if len(words) != 2:
        raise _Reject(UNRECOGNISED)
    millis = _epoch_or_iso_ms(words[0])
    return AccessEvent(event_time=millis, ip=_ip(words[1]), method="", path="", status=0, bytes=0, user_agent="")


#: The JSON keys of each field, in the order they are looked for (a dotted key is a nested path).
_JSON_KEYS: Final = {
    "ip": ["remote_addr", "client_ip", "request.client_ip", "request.remote_ip", "ClientHost", "remote_ip", "ip"],
    "time": ["time_iso8601", "time_local", "ts", "StartUTC", "@timestamp", "timestamp", "time", "msec"],
    "method": ["request_method", "method", "request.method", "RequestMethod"],
    "path": ["request_uri", "uri", "request.uri", "RequestPath", "path"],
    "status": ["status", "DownstreamStatus", "status_code"],
    "bytes": ["body_bytes_sent", "bytes_sent", "size", "DownstreamContentSize", "bytes"],
    "agent": ["http_user_agent", "user_agent", "request.headers.User-Agent", "request_User-Agent", "agent"],
}


def _json_field(record: dict[str, object], field: str) -> tuple[bool, object]:
    """(found, value) of ``field``: the first of its keys present and not null, flat or as a path
    of nested objects."""
    for key in _JSON_KEYS[field]:
        value = record.get(key)
        if value is None and "." in key:
            node: object = record
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            value = node
        if value is not None:
            return True, value
    return False, None


def _count(value: object, top: int) -> int | None:
    """A JSON integer (not a boolean) from 0 to ``top``, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        return None
    return value


def _json_text(value: object) -> str:
    if isinstance(value, list) and value:
        value = value[0]
    return value if isinstance(value, str) else ""


def _json(line: str) -> AccessEvent:
    try:
        record = json.loads(line, parse_float=str)  # a float keeps its text: exact to the millisecond
    except (ValueError, RecursionError):
        raise _Reject(UNRECOGNISED) from None
    if not isinstance(record, dict):
        raise _Reject(UNRECOGNISED)
    found, ip = _json_field(record, "ip")
    if not found or not isinstance(ip, str):
        raise _Reject(BAD_IP)
    _ip(ip)
    found, when = _json_field(record, "time")
    if isinstance(when, int) and not isinstance(when, bool) and when >= 0:
        when = str(when)
    if not found or not isinstance(when, str):
        raise _Reject(BAD_TIMESTAMP)
    millis = _time_ms(when) if when[2:3] == "/" else _epoch_or_iso_ms(when)
    method, path = _json_text(_json_field(record, "method")[1]), _json_text(_json_field(record, "path")[1])
    request = record.get("request")
    if not method and not path and isinstance(request, str):
        method, path = _method_and_path(request)
    found, status_value = _json_field(record, "status")
    if isinstance(status_value, str) and len(status_value) == 3 and _digits(status_value):
        status_value = int(status_value)
    status = _count(status_value, 999) if found else 0
    if status is None:
        raise _Reject(BAD_STATUS)
    found, size_value = _json_field(record, "bytes")
    if isinstance(size_value, str) and _digits(size_value):
        size_value = int(size_value)
    size = _count(size_value, _MAX_LONG) if found and size_value != "-" else 0
    if size is None:
        raise _Reject(BAD_BYTES)
    agent = _json_text(_json_field(record, "agent")[1])
    return AccessEvent(event_time=millis, ip=ip, method=method, path=path, status=status, bytes=size, user_agent=agent)


class LineScanner:
    """Classifies the lines of one file the way the tailer does (see the module docstring)."""

    def __init__(self, fmt: str = "auto", *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
        self.max_line_bytes = max_line_bytes
        #: "httpd", "json" or "time-ip" once decided (auto), or the given format.
        self.grammar: str | None = None if fmt == "auto" else fmt

    def scan(self, raw: bytes) -> AccessEvent | Rejected:
        try:
            return self._scan(raw)
        except _Reject as rejected:
            return Rejected(rejected.kind)

    def _scan(self, raw: bytes) -> AccessEvent:
        line = _text(raw, self.max_line_bytes)
        if self.grammar == "time-ip":
            return _time_ip(line)
        if self.grammar == "json" or (self.grammar is None and line.lstrip().startswith("{")):
            event = _json(line)
            self.grammar = "json"
            return event
        if self.grammar is not None:
            return _httpd(line, self.grammar)
        try:
            event = _httpd(line, "httpd")
            self.grammar = "httpd"
        except _Reject as httpd_reject:
            try:
                event = _time_ip(line)
            except _Reject as time_ip_reject:
                raise (httpd_reject if "[" in line and '"' in line else time_ip_reject) from None
            self.grammar = "time-ip"
        return event


def _text(raw: bytes, max_line_bytes: int) -> str:
    """Rule 1 after the split: the text of a line, or its kind."""
    if len(raw) >= max_line_bytes:
        raise _Reject(TOO_LONG)
    raw = raw.removesuffix(b"\r")
    if not raw.strip():
        raise _Reject(EMPTY)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Reject(NOT_UTF8) from None


def _docker_entry(line: str) -> tuple[str, bytes, bool]:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        raise _Reject(UNRECOGNISED) from None
    text = entry.get("log") if isinstance(entry, dict) else None
    stream = entry.get("stream") if isinstance(entry, dict) else None
    if not isinstance(text, str) or not isinstance(stream, str):
        raise _Reject(UNRECOGNISED)
    piece = text[-1:] != "\n"
    return stream, (text if piece else text[:-1]).encode("utf-8", "surrogatepass"), piece


def _cri_entry(line: str) -> tuple[str, bytes, bool]:
    parts = line.split(" ", 3)
    if len(parts) != 4:
        raise _Reject(UNRECOGNISED)
    time, stream, tags, text = parts
    date = time[:10]
    dated = len(time) > 11 and time[10] == "T" and date[4] == date[7] == "-"
    if not (dated and _digits(date[:4] + date[5:7] + date[8:10])) or any(c.isspace() for c in time):
        raise _Reject(UNRECOGNISED)
    flags = tags.split(":")
    if stream not in ("stdout", "stderr") or not all(flag and set(flag) <= _LETTERS for flag in flags):
        raise _Reject(UNRECOGNISED)
    return stream, text.encode("utf-8"), "P" in flags


def _container_kind(line: str) -> str:
    for kind, entry in (("docker", _docker_entry), ("cri", _cri_entry)):
        if kind == "docker" and not line.startswith("{"):
            continue
        try:
            entry(line)
        except _Reject:
            continue
        return kind
    return "none"


def container_lines(
    lines: Iterable[bytes], mode: str = "auto", max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[bytes | Rejected]:
    """The lines of one file to scan (rule 2): a container log's pieces put together, its lines that
    are not entries rejected; a file that is not a container log as it is."""
    if mode not in CONTAINER_LOGS:
        raise ValueError(f"unknown container.log {mode!r}; expected one of {', '.join(CONTAINER_LOGS)}")
    kind = None if mode == "auto" else mode
    pieces: dict[str, list[bytes]] = {}
    waited = waited_bytes = 0
    for raw in lines:
        if kind is None:
            try:
                kind = _container_kind(_text(raw, max_line_bytes))
            except _Reject:
                yield raw
                continue
        if kind == "none":
            yield raw
            continue
        try:
            stream, text, piece = (_docker_entry if kind == "docker" else _cri_entry)(_text(raw, max_line_bytes))
        except _Reject as rejected:
            yield Rejected(rejected.kind)
        else:
            pending = pieces.setdefault(stream, [])
            pending.append(text)
            if not piece or sum(map(len, pending)) >= max_line_bytes:
                yield b"".join(pieces.pop(stream))
        waited, waited_bytes = (waited + 1, waited_bytes + len(raw)) if pieces else (0, 0)
        if waited >= _HOLD_LINES or waited_bytes >= 4 * max_line_bytes:
            yield from (b"".join(pending) for pending in pieces.values())
            pieces, waited, waited_bytes = {}, 0, 0
    yield from (b"".join(pending) for pending in pieces.values())


def tailer_lines(data: bytes, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The lines of ``data`` as the tailer hands them on (no LF; long lines in pieces)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end
        while stop - start > max_line_bytes or (end < 0 and stop - start == max_line_bytes):
            yield data[start : start + max_line_bytes]
            start += max_line_bytes
        if end < 0:
            if start < stop:
                yield data[start:stop]
            return
        yield data[start:end]
        start = end + 1


@dataclass(frozen=True)
class FileRecount:
    """The recount of one file: every line is an event or a dead letter of one kind."""

    path: str
    window_ms: int
    lines: int
    events: int
    counts: dict[Key, int]
    dead_letters: dict[str, int]
    max_event_time: int | None
    #: What the lines were parsed as ("httpd", "time-ip", a given format; None: no line fit).
    grammar: str | None


def recount_file(
    path: str | Path,
    window_ms: int = defaults.WINDOW_MS,
    *,
    fmt: str = "auto",
    max_line_bytes: int = MAX_LINE_BYTES,
    container: str = "auto",
) -> FileRecount:
    """Recount ``path`` as the tailer with ``format = fmt``, ``max.line.bytes = max_line_bytes`` and
    ``container.log = container`` would."""
    if window_ms < 1:
        raise ValueError(f"window_ms must be >= 1, got {window_ms}")
    scanner = LineScanner(fmt, max_line_bytes=max_line_bytes)
    counts: Counter[Key] = Counter()
    dead: Counter[str] = Counter()
    lines = events = 0
    max_event_time: int | None = None
    data = Path(path).read_bytes()
    for raw in container_lines(tailer_lines(data, max_line_bytes), container, max_line_bytes):
        lines += 1
        scanned = raw if isinstance(raw, Rejected) else scanner.scan(raw)
        if isinstance(scanned, Rejected):
            dead[scanned.kind] += 1
            continue
        events += 1
        t = scanned["event_time"]
        counts[(t - t % window_ms, scanned["ip"])] += 1
        max_event_time = t if max_event_time is None else max(max_event_time, t)
    return FileRecount(
        path=str(path),
        window_ms=window_ms,
        lines=lines,
        events=events,
        counts=dict(counts),
        dead_letters=dict(dead),
        max_event_time=max_event_time,
        grammar=scanner.grammar,
    )


def merge_recounts(parts: list[FileRecount]) -> FileRecount:
    """One recount of an input that spans several files (rotated ones first, then the live file)."""
    counts: Counter[Key] = Counter()
    dead: Counter[str] = Counter()
    for part in parts:
        counts.update(part.counts)
        dead.update(part.dead_letters)
    times = [p.max_event_time for p in parts if p.max_event_time is not None]
    return FileRecount(
        path=" + ".join(p.path for p in parts),
        window_ms=parts[0].window_ms,
        lines=sum(p.lines for p in parts),
        events=sum(p.events for p in parts),
        counts=dict(counts),
        dead_letters=dict(dead),
        max_event_time=max(times) if times else None,
        grammar=next((p.grammar for p in parts if p.grammar), None),
    )
