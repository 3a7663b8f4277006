r"""A messy sample access log with a known truth, for tests and benchmarks of the whole pipeline.

:func:`write_sample_log` writes ``lines`` lines as nginx and Apache httpd write them in their stock
formats (nginx ``combined`` and ``main``, Apache ``combined`` and ``common``), with what real logs
hold: user agents with escaped quotes and backslashes, TLS handshakes sent to a plain-HTTP port
(``\x16\x03\x01...``), ``-`` and empty requests, HTTP/0.9, UTF-8 and spaces in paths, long URLs,
``-`` byte counts, IPv4 and IPv6 clients (``::1``, ``::ffff:a.b.c.d``), UTC offsets from -1200 to
+1400 and a few CRLF line ends; plus exactly ``round(lines * malformed_ratio)`` malformed lines, one
kind after the other (never the first line, so ``format = auto`` decides on a good line).

Event times advance ``1000 / lines_per_second`` ms per line from ``start_ms``, are whole seconds, and
go back by less than 3 s from the newest one so far: a streaming job with 5 s of allowed lateness
drops none. The returned :class:`SampleTruth` has the expected count per ``(window_start, ip)``.

The renderers (:func:`escape_nginx`, :func:`escape_apache`, :func:`render_httpd_line`) are public:
the property tests draw lines with them.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal

from onceflow.core import defaults

__all__ = [
    "MALFORMED_LINES",
    "SampleTruth",
    "Style",
    "escape_apache",
    "escape_nginx",
    "render_httpd_line",
    "time_local",
    "write_sample_log",
]

Style = Literal["nginx", "apache"]
#: 2026-11-22T14:30:00Z
DEFAULT_START_MS: Final = 1_795_357_800_000
_APACHE_C_STYLE = {0x08: "\\b", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v", 0x0C: "\\f"}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def escape_nginx(data: bytes) -> str:
    """nginx ``escape=default``: ``"``, ``\\``, bytes below 0x20 and above 0x7E as ``\\xHH``."""
    return "".join(f"\\x{b:02X}" if b in (0x22, 0x5C) or b < 0x20 or b > 0x7E else chr(b) for b in data)


def escape_apache(data: bytes) -> str:
    """Apache ``ap_escape_logitem``: ``\\"``, ``\\\\``, C-style whitespace controls, other
    non-printable bytes as ``\\xhh``."""
    out = []
    for b in data:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif b in _APACHE_C_STYLE:
            out.append(_APACHE_C_STYLE[b])
        elif b < 0x20 or b > 0x7E:
            out.append(f"\\x{b:02x}")
        else:
            out.append(chr(b))
    return "".join(out)


def time_local(event_time_ms: int, offset_minutes: int) -> str:
    """``dd/Mon/yyyy:HH:MM:SS +hhmm`` of an epoch-ms time in a zone ``offset_minutes`` east of UTC."""
    local = datetime.fromtimestamp(event_time_ms // 1000, UTC) + timedelta(minutes=offset_minutes)
    sign = "+" if offset_minutes >= 0 else "-"
    hours, minutes = divmod(abs(offset_minutes), 60)
    date = f"{local.day:02d}/{_MONTHS[local.month - 1]}/{local.year:04d}"
    return f"{date}:{local:%H:%M:%S} {sign}{hours:02d}{minutes:02d}"


def time_iso8601(event_time_ms: int, offset_minutes: int) -> str:
    """nginx's ``$time_iso8601`` (``yyyy-mm-ddTHH:MM:SS+hh:mm``) of an epoch-ms time in a zone
    ``offset_minutes`` east of UTC."""
    local = datetime.fromtimestamp(event_time_ms // 1000, UTC) + timedelta(minutes=offset_minutes)
    sign = "+" if offset_minutes >= 0 else "-"
    hours, minutes = divmod(abs(offset_minutes), 60)
    return f"{local:%Y-%m-%dT%H:%M:%S}{sign}{hours:02d}:{minutes:02d}"


def render_httpd_line(
    *,
    style: Style,
    ip: str,
    event_time_ms: int,
    offset_minutes: int,
    request: bytes,
    status: int,
    size: int | None,
    referer: bytes | None = None,
    user_agent: bytes | None = None,
    extra: Sequence[bytes] = (),
    user: str = "-",
    vhost: str | None = None,
    extension: Sequence[str] = (),
    iso_time: bool = False,
) -> str:
    """One line as ``style`` writes it: common without ``referer``, combined with referer and user
    agent, main (or more) with ``extra`` quoted fields after them. ``size`` None is written ``-``.
    ``vhost`` (``host:port``) goes first, as Apache's ``vhost_combined`` writes it; ``extension``
    fields (a custom format's ``$request_time``...) go last, as given, separated by a space. The time
    is ``$time_local`` (``%t``), or ``$time_iso8601`` with ``iso_time``."""
    escape = escape_nginx if style == "nginx" else escape_apache
    line = (
        f"{'' if vhost is None else vhost + ' '}"
        f"{ip} - {user} [{(time_iso8601 if iso_time else time_local)(event_time_ms, offset_minutes)}]"
        f' "{escape(request)}" {status:03d} '
        f"{'-' if size is None else size}"
    )
    if referer is not None:
        trailing = [referer, user_agent if user_agent is not None else b"-", *extra]
        line += "".join(f' "{escape(field)}"' for field in trailing)
    return line + "".join(f" {field}" for field in extension)


@dataclass(frozen=True)
class SampleTruth:
    """What :func:`write_sample_log` wrote: ``lines`` lines (every one ends with a newline), of which
    ``events`` are events counted in ``counts[(window_start, ip)]`` and the rest malformed, per kind."""

    lines: int
    events: int
    window_ms: int
    counts: dict[tuple[int, str], int]
    malformed: dict[str, int]
    max_event_time: int | None


#: Malformed lines the sample writes, in turn: (kind, line); ``{ip}`` and ``{time}`` are filled in.
MALFORMED_LINES: Final[tuple[tuple[str, bytes], ...]] = (
    ("bad_timestamp", b'{ip} - - [32/Foo/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 12 "-" "curl/8.5.0"'),
    ("bad_status", b'{ip} - - [{time}] "GET /status HTTP/1.1" abc 12 "-" "curl/8.5.0"'),
    ("bad_bytes", b'{ip} - - [{time}] "GET /bytes HTTP/1.1" 200 12k "-" "curl/8.5.0"'),
    ("bad_ip", b'999.1.1.1 - - [{time}] "GET /ip HTTP/1.1" 200 12 "-" "curl/8.5.0"'),
    ("bad_quoting", b'{ip} - - [{time}] "GET /cut HTTP/1.1" 200 12 "-" "Mozilla/5.0 (cut'),
    ("not_utf8", b'{ip} - - [{time}] "GET /latin1 HTTP/1.1" 200 12 "-" "caf\xe9"'),
    ("empty", b""),
    ("unrecognised", b'{ip} - - [{time}] "GET /only-referer HTTP/1.1" 200 12 "-"'),
    ("bad_quoting", b'{ip} - - [{time}] "GET /a"b HTTP/1.1" 200 12 "-" "curl/8.5.0"'),
    ("unrecognised", b"<html><body>502 Bad Gateway</body></html>"),
)

_OFFSETS = (0, 0, 0, 60, -300, -480, 330, 345, 840, -720, 570, -210, 780)
_METHODS = ("GET",) * 12 + ("POST",) * 3 + ("HEAD", "PUT", "DELETE", "OPTIONS", "PROPFIND", "M-SEARCH")
_STATUSES = (200,) * 20 + (204, 301, 302, 304, 304, 400, 401, 403, 404, 404, 404, 408, 413, 429, 499, 500, 502, 503)
_PATHS = ("/", "/index.html", "/api/v1/items", "/static/app.js", "/favicon.ico", "/search", "/login", "/img/logo.png")
_AGENTS: tuple[bytes, ...] = (
    b"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
    b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    b"curl/8.5.0",
    b"-",
    b'Mozilla/5.0 (compatible; "Quoted Bot"/2.1; +http://example.com/bot)',
    b'python-requests/2.32 "x\\"y"',
    b"Agent with \\ backslash and tab\there",
    "Bücher-Crawler/1.0 (Übersicht)".encode(),
)
_TLS_HELLOS = (b"\x16\x03\x01\x00\xf1\x01\x00\x00\xed\x03\x03", b"\x16\x03\x01\x02\x00\x01", b"\x00\xff\xfe")


def _ips(rng: random.Random, count: int) -> list[str]:
    ips = ["::1", "127.0.0.1"]
    while len(ips) < count:
        roll = rng.random()
        if roll < 0.7:
            ips.append(f"{rng.randrange(1, 224)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}")
        elif roll < 0.9:
            ips.append(f"2001:db8:{rng.randrange(65536):x}::{rng.randrange(1, 65536):x}")
        else:
            ips.append(f"::ffff:10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}")
    return ips


def _request(rng: random.Random, long_url_ratio: float) -> bytes:
    roll = rng.random()
    method, path = rng.choice(_METHODS), rng.choice(_PATHS)
    if roll < long_url_ratio:
        return f"GET /search?q={'x' * rng.randrange(10_000, 40_000)} HTTP/1.1".encode()
    if roll < 0.02:
        return b"-"
    if roll < 0.04:
        return b""
    if roll < 0.06:
        return rng.choice(_TLS_HELLOS)
    if roll < 0.07:
        return f"GET {path}".encode()
    if roll < 0.09:
        return f'{method} /files/my "résumé" {rng.randrange(100)}.pdf?a=\\b HTTP/1.0'.encode()
    return f"{method} {path}?id={rng.randrange(100_000)} HTTP/1.1".encode()


def _good_line(rng: random.Random, ip: str, event_time: int, long_url_ratio: float) -> str:
    flavour = rng.random()
    style: Style = "nginx" if flavour < 0.6 else "apache"
    agent = rng.choice(_AGENTS)
    referer = rng.choice((b"-", b"https://example.com/", b'https://example.com/page?x="1"'))
    extra: list[bytes] = []
    if flavour < 0.25:  # nginx main: combined + x_forwarded_for
        extra = [rng.choice((b"-", b"203.0.113.9", b"203.0.113.9, 198.51.100.2"))]
    common = flavour >= 0.85  # Apache common
    return render_httpd_line(
        style=style,
        ip=ip,
        event_time_ms=event_time,
        offset_minutes=rng.choice(_OFFSETS),
        request=_request(rng, long_url_ratio),
        status=rng.choice(_STATUSES),
        size=None if rng.random() < 0.05 else rng.randrange(0, 200_000),
        referer=None if common else referer,
        user_agent=None if common else agent,
        extra=extra,
    )


def write_sample_log(
    path: str | Path,
    lines: int,
    *,
    seed: int,
    malformed_ratio: float = 0.005,
    start_ms: int = DEFAULT_START_MS,
    lines_per_second: int = 200,
    window_ms: int = defaults.WINDOW_MS,
    ips: int = 200,
    long_url_ratio: float = 0.001,
) -> SampleTruth:
    """Write the sample (see the module docstring) to ``path``, replacing it; the same arguments
    write the same bytes."""
    if lines < 0 or not 0 <= malformed_ratio <= 1 or lines_per_second < 1 or window_ms < 1 or ips < 2:
        raise ValueError("lines >= 0, 0 <= malformed_ratio <= 1, lines_per_second, window_ms >= 1, ips >= 2")
    rng = random.Random(seed)
    pool = _ips(rng, ips)
    weights = [1 / (rank + 1) for rank in range(len(pool))]
    bad = set(rng.sample(range(1, lines), min(round(lines * malformed_ratio), max(lines - 1, 0))))
    counts: Counter[tuple[int, str]] = Counter()
    malformed: Counter[str] = Counter()
    max_event_time: int | None = None
    with open(path, "wb") as out:
        for i in range(lines):
            now = start_ms + i * 1000 // lines_per_second
            event_time = (now - (rng.randrange(2000) if rng.random() < 0.7 else 0)) // 1000 * 1000
            ip = rng.choices(pool, weights)[0]
            if i in bad:
                kind, template = MALFORMED_LINES[sum(malformed.values()) % len(MALFORMED_LINES)]
                malformed[kind] += 1
                data = template.replace(b"{ip}", ip.encode()).replace(b"{time}", time_local(event_time, 0).encode())
            else:
                data = _good_line(rng, ip, event_time, long_url_ratio).encode()
                counts[(event_time - event_time % window_ms, ip)] += 1
                max_event_time = event_time if max_event_time is None else max(max_event_time, event_time)
            out.write(data + (b"\r\n" if rng.random() < 0.002 else b"\n"))
    return SampleTruth(
        lines=lines,
        events=lines - len(bad),
        window_ms=window_ms,
        counts=dict(counts),
        malformed=dict(malformed),
        max_event_time=max_event_time,
    )
