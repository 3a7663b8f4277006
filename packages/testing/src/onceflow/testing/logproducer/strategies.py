"""Hypothesis strategies: well-formed httpd access lines, as nginx or Apache would write them, with
the AccessEvent each must parse to.

The values are drawn first (any IPv4/IPv6 client, time and UTC offset, method and a path with
characters that need escaping, optional referer/user agent of any bytes, ``-`` byte counts, extra
trailing fields, a ``vhost_combined`` host:port, extension fields, ``$time_iso8601``), then rendered and escaped by
:func:`onceflow.logproducer.sample.render_httpd_line`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import strategies as st

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.sample import Style, escape_apache, escape_nginx, render_httpd_line

__all__ = ["access_lines", "client_ips", "json_access_lines"]

_MAX_OFFSET = 23 * 60 + 59
#: 1970-01-02 .. 2099-12-31, so every UTC offset stays inside years 1970..2100.
_SECONDS = st.integers(min_value=86_400, max_value=4_102_358_400)


def client_ips() -> st.SearchStrategy[str]:
    """IPv4, IPv6 (as Python writes them), ``::1`` and IPv4-mapped ``::ffff:a.b.c.d``."""
    v4 = st.ip_addresses(v=4).map(str)
    return st.one_of(v4, st.ip_addresses(v=6).map(str), st.just("::1"), v4.map(lambda ip: f"::ffff:{ip}"))


def _paths() -> st.SearchStrategy[str]:
    text = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=40)
    return st.builds(lambda tail: "/" + tail, st.one_of(text, st.text(st.characters(codec="utf-8"), max_size=10)))


@st.composite
def _request(draw: st.DrawFn) -> tuple[bytes, str, str]:
    """(request line bytes, expected method, expected path)."""
    kind = draw(st.sampled_from(["full", "full", "full", "http/0.9", "none", "junk"]))
    if kind == "none":
        return draw(st.sampled_from([b"", b"-"])), "", ""
    if kind == "junk":
        junk = draw(st.binary(min_size=1, max_size=30).filter(lambda b: not chr(b[0]).isalpha() and b != b"-"))
        return junk, "", junk.decode("utf-8", "backslashreplace")
    method = draw(st.from_regex(r"[A-Z][A-Z_-]{0,9}", fullmatch=True))
    path = draw(_paths())
    if kind == "http/0.9":
        if path.split(" ")[-1].startswith("HTTP/"):
            path += "x"
        return f"{method} {path}".encode(), method, path
    proto = draw(st.sampled_from(["HTTP/1.0", "HTTP/1.1", "HTTP/2.0"]))
    return f"{method} {path} {proto}".encode(), method, path


@st.composite
def _extension(draw: st.DrawFn, style: Style) -> list[str]:
    """Extension fields: unquoted tokens (``0.005``, ``-``, ``rt=0.003``), and after the first one
    also quoted fields of any bytes."""
    token = st.from_regex(r"[!#-~][!-~]{0,8}", fullmatch=True)
    escape = escape_nginx if style == "nginx" else escape_apache
    quoted = st.binary(max_size=10).map(lambda data: f'"{escape(data)}"')
    if not draw(st.booleans()):
        return []
    first: str = draw(token)
    return [first, *draw(st.lists(st.one_of(token, quoted), max_size=3))]


@st.composite
def access_lines(draw: st.DrawFn) -> tuple[bytes, AccessEvent]:
    """(a line, no newline; the event it parses to)."""
    style: Style = draw(st.sampled_from(["nginx", "apache"]))
    ip = draw(client_ips())
    seconds = draw(_SECONDS)
    request, method, path = draw(_request())
    status = draw(st.integers(0, 999))
    size = draw(st.one_of(st.none(), st.integers(0, (1 << 63) - 1)))
    shape = draw(st.sampled_from(["common", "combined", "main"]))
    referer = agent = None
    extra: list[bytes] = []
    if shape != "common":
        referer = draw(st.binary(max_size=20))
        agent = draw(st.one_of(st.just(b"-"), st.binary(max_size=40), st.text(max_size=40).map(str.encode)))
    if shape == "main":
        extra = draw(st.lists(st.binary(max_size=10), min_size=1, max_size=3))
    line = render_httpd_line(
        style=style,
        ip=ip,
        event_time_ms=seconds * 1000,
        offset_minutes=draw(st.integers(-_MAX_OFFSET, _MAX_OFFSET)),
        request=request,
        status=status,
        size=size,
        referer=referer,
        user_agent=agent,
        extra=extra,
        user=draw(st.sampled_from(["-", "frank", "user@example.com"])),
        vhost=draw(st.one_of(st.none(), st.from_regex(r"[a-z0-9.-]{1,20}:[0-9]{1,5}", fullmatch=True))),
        extension=draw(_extension(style)),
        iso_time=draw(st.booleans()),
    ) + draw(st.sampled_from(["", "", " ", "\r"]))
    event: AccessEvent = {
        "event_time": seconds * 1000,
        "ip": ip,
        "method": method,
        "path": path,
        "status": status,
        "bytes": size or 0,
        "user_agent": "" if agent is None else agent.decode("utf-8", "backslashreplace"),
    }
    return line.encode(), event


def _iso_utc(millis: int, digits: int) -> str:
    """``yyyy-mm-ddTHH:MM:SS.fffZ`` with ``digits`` fraction digits (the milliseconds, zero-padded)."""
    moment = datetime.fromtimestamp(millis // 1000, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis % 1000:03d}{'0' * (digits - 3)}Z"


@st.composite
def json_access_lines(draw: st.DrawFn) -> tuple[bytes, AccessEvent]:
    """(a JSON access-log line as nginx ``escape=json``, Caddy or Traefik writes it; the event it parses to)."""
    ip = draw(client_ips())
    millis = draw(_SECONDS) * 1000 + draw(st.integers(0, 999))
    request, method, path = draw(_request())
    status, size = draw(st.integers(0, 999)), draw(st.integers(0, (1 << 63) - 1))
    agent = draw(st.text(max_size=30))
    style = draw(st.sampled_from(["nginx", "caddy", "traefik"]))
    if style == "nginx":  # $request as one string, numbers as strings
        text = request.decode("utf-8", "backslashreplace")
        fields = {"time_iso8601": _iso_utc(millis, 3), "remote_addr": ip, "request": text, "status": f"{status:03d}",
                  "body_bytes_sent": str(size), "http_user_agent": agent}  # fmt: skip
        line = json.dumps(fields, ensure_ascii=draw(st.booleans()))
    elif style == "caddy":  # ts: epoch seconds as a JSON number; the request nested
        method, path = draw(st.from_regex(r"[A-Z]{1,8}", fullmatch=True)), draw(st.text(max_size=30))
        rest = {"request": {"client_ip": ip, "method": method, "uri": path, "headers": {"User-Agent": [agent]}},
                "size": size, "status": status}  # fmt: skip
        line = (
            f'{{"ts":{millis // 1000}.{millis % 1000:03d}{draw(st.sampled_from(["", "4567"]))},{json.dumps(rest)[1:]}'
        )
    else:
        method, path = draw(st.from_regex(r"[A-Z]{1,8}", fullmatch=True)), draw(st.text(max_size=30))
        traefik = {"ClientHost": ip, "StartUTC": _iso_utc(millis, 9), "RequestMethod": method, "RequestPath": path,
                  "DownstreamStatus": status, "DownstreamContentSize": size, "request_User-Agent": agent}  # fmt: skip
        line = json.dumps(traefik)
    event: AccessEvent = {
        "event_time": millis, "ip": ip, "method": method, "path": path, "status": status, "bytes": size,
        "user_agent": agent,
    }  # fmt: skip
    return line.encode(), event
