r"""Access-log lines with the exact outcome expected of them, written from the nginx
(``log_format combined`` / ``main``, ``escape=default``) and Apache httpd (mod_log_config
``%h %l %u %t \"%r\" %>s %b``, ``\"``/``\\``/``\xhh`` escaping) documentation.

:data:`GOOD` lines are events (``shape`` is the stock format they are in); :data:`BAD` lines are
malformed with a kind and a piece of the reason. Both parsers (the tailer's and the audit's
independent recount) are checked against every line.
"""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.core.avro import AccessEvent

__all__ = ["BAD", "GOOD", "BadLine", "GoodLine"]

T = 1795357801000  # 22/Nov/2026:14:30:01 +0000
NOW = "22/Nov/2026:14:30:01 +0000"


@dataclass(frozen=True)
class GoodLine:
    name: str
    line: bytes
    shape: str
    event: AccessEvent


@dataclass(frozen=True)
class BadLine:
    """Malformed in a file whose format is ``grammar`` (``httpd``: auto decided on an httpd line)."""

    name: str
    line: bytes
    kind: str
    reason: str
    grammar: str = "httpd"


def _event(
    ip: str = "10.0.0.7",
    *,
    method: str = "GET",
    path: str = "/index.html",
    status: int = 200,
    size: int = 612,
    agent: str = "curl/8.5.0",
    event_time: int = T,
) -> AccessEvent:
    return {
        "event_time": event_time, "ip": ip, "method": method, "path": path, "status": status, "bytes": size,
        "user_agent": agent,
    }  # fmt: skip


def _line(text: str) -> bytes:
    return text.encode()


def _zoned(ip: str, time_local: str) -> bytes:
    """The nginx combined line of ``_event()`` from ``ip`` at ``time_local``."""
    return f'{ip} - - [{time_local}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"'.encode()


GOOD: tuple[GoodLine, ...] = (
    GoodLine("nginx combined", _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"'),
             "combined", _event()),
    GoodLine("apache common", _line(f'10.0.0.7 - frank [{NOW}] "GET /index.html HTTP/1.0" 200 612'),
             "common", _event(agent="")),
    GoodLine("apache combined, ident and user",
             _line(f'127.0.0.1 ident frank [{NOW}] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
                   '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"'),
             "combined",
             _event("127.0.0.1", path="/apache_pb.gif", size=2326, agent="Mozilla/4.08 [en] (Win98; I ;Nav)")),
    GoodLine("nginx main with x_forwarded_for",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0" "203.0.113.9, 10.1.1.1"'),
             "main", _event()),
    GoodLine("extra trailing fields ignored",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0" "-" "rt=0.003" "x"'),
             "main", _event()),
    GoodLine("apache escaped quote and backslash in user agent",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "Bot \\"quoted\\" C:\\\\dir\\\\"'),
             "combined", _event(agent='Bot "quoted" C:\\dir\\')),
    GoodLine("nginx \\x22 and \\x5C in user agent",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "Bot \\x22quoted\\x22 C:\\x5Cdir"'),
             "combined", _event(agent='Bot "quoted" C:\\dir')),
    GoodLine("apache C-style whitespace escapes",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "a\\tb\\nc\\rd\\be\\vf\\fg"'),
             "combined", _event(agent="a\tb\nc\rd\be\vf\fg")),
    GoodLine("nginx UTF-8 path as \\xHH",
             _line(f'10.0.0.7 - - [{NOW}] "GET /caf\\xC3\\xA9 HTTP/1.1" 200 612 "-" "curl/8.5.0"'),
             "combined", _event(path="/café")),
    GoodLine("apache lowercase \\xhh, raw UTF-8 untouched",
             _line(f'10.0.0.7 - - [{NOW}] "GET /caf\\xc3\\xa9/größe HTTP/1.1" 200 612 "-" "curl/8.5.0"'),
             "combined", _event(path="/café/größe")),
    GoodLine("not UTF-8 after decoding: backslashreplace",
             _line(f'10.0.0.7 - - [{NOW}] "GET /caf\\xE9 HTTP/1.1" 200 612 "-" "curl/8.5.0"'),
             "combined", _event(path="/caf\\xe9")),
    GoodLine("TLS handshake on a plain port (nginx)",
             _line(f'10.0.0.7 - - [{NOW}] "\\x16\\x03\\x01\\x00\\xF1\\x01" 400 157 "-" "-"'),
             "combined", _event(method="", path="\x16\x03\x01\x00\\xf1\x01", status=400, size=157, agent="-")),
    GoodLine("request '-' (408)", _line(f'10.0.0.7 - - [{NOW}] "-" 408 - "-" "-"'),
             "combined", _event(method="", path="", status=408, size=0, agent="-")),
    GoodLine("empty request (400)", _line(f'10.0.0.7 - - [{NOW}] "" 400 0 "-" "-"'),
             "combined", _event(method="", path="", status=400, size=0, agent="-")),
    GoodLine("HTTP/0.9", _line(f'10.0.0.7 - - [{NOW}] "GET /index.html" 200 612'),
             "common", _event(agent="")),
    GoodLine("space in path", _line(f'10.0.0.7 - - [{NOW}] "GET /my file.txt HTTP/1.1" 404 0 "-" "curl/8.5.0"'),
             "combined", _event(path="/my file.txt", status=404, size=0)),
    GoodLine("lowercase junk method is still METHOD PATH",
             _line(f'10.0.0.7 - - [{NOW}] "get / HTTP/1.1" 400 0 "-" "-"'),
             "combined", _event(method="get", path="/", status=400, size=0, agent="-")),
    GoodLine("one word request", _line(f'10.0.0.7 - - [{NOW}] "GARBAGE" 400 0 "-" "-"'),
             "combined", _event(method="", path="GARBAGE", status=400, size=0, agent="-")),
    GoodLine("bytes '-'", _line(f'10.0.0.7 - - [{NOW}] "HEAD / HTTP/1.1" 304 - "-" "curl/8.5.0"'),
             "combined", _event(method="HEAD", path="/", status=304, size=0)),
    GoodLine("long URL", _line(f'10.0.0.7 - - [{NOW}] "GET /q?{"a" * 40_000} HTTP/1.1" 414 0 "-" "curl/8.5.0"'),
             "combined", _event(path="/q?" + "a" * 40_000, status=414, size=0)),
    GoodLine("IPv6 loopback", _zoned("::1", NOW),
             "combined", _event("::1")),
    GoodLine("IPv4-mapped IPv6", _zoned("::ffff:1.2.3.4", NOW),
             "combined", _event("::ffff:1.2.3.4")),
    GoodLine("IPv6", _zoned("2001:db8::8a2e:370:7334", NOW),
             "combined", _event("2001:db8::8a2e:370:7334")),
    GoodLine("offset +0530", _zoned("10.0.0.7", "22/Nov/2026:20:00:01 +0530"),
             "combined", _event()),
    GoodLine("offset -0800, previous day",
             _zoned("10.0.0.7", "22/Nov/2026:06:30:01 -0800"),
             "combined", _event()),
    GoodLine("offset +1400, next day", _zoned("10.0.0.7", "23/Nov/2026:04:30:01 +1400"),
             "combined", _event()),
    GoodLine("offset -1200", _zoned("10.0.0.7", "22/Nov/2026:02:30:01 -1200"),
             "combined", _event()),
    GoodLine("leap day", _zoned("10.0.0.7", "29/Feb/2028:00:00:00 +0000"),
             "combined", _event(event_time=1835395200000)),
    GoodLine("status 999", _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 999 612 "-" "curl/8.5.0"'),
             "combined", _event(status=999)),
    GoodLine("status 000", _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 000 612 "-" "curl/8.5.0"'),
             "combined", _event(status=0)),
    GoodLine("CRLF", _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"\r'),
             "combined", _event()),
    GoodLine("trailing spaces", _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"  '),
             "combined", _event()),
    GoodLine("escaped quote right before the closing quote",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "ends with \\""'),
             "combined", _event(agent='ends with "')),
    GoodLine("nginx combined + $request_time $upstream_response_time",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0" 0.005 0.004'),
             "combined", _event()),
    GoodLine("nginx main + timings, an upstream '-'",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0" "203.0.113.9" 0.012 -'),
             "main", _event()),
    GoodLine("key=value extension fields with quoted values",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0" rt=0.003 uct="0.000"'),
             "combined", _event()),
    GoodLine("tab before an extension field, a quoted one after it",
             _line(f'10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"\t0.005 "pool a"'),
             "combined", _event()),
    GoodLine("apache common + %D", _line(f'10.0.0.7 - frank [{NOW}] "GET /index.html HTTP/1.0" 200 612 4211'),
             "common", _event(agent="")),
    GoodLine("apache vhost_combined (Debian's other_vhosts_access.log)",
             _line(f'www.example.com:443 10.0.0.7 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"'),
             "combined", _event()),
    GoodLine("vhost_combined with an IPv6 client",
             _line(f'example.org:80 2001:db8::1 - - [{NOW}] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"'),
             "combined", _event("2001:db8::1")),
    GoodLine("nginx $time_iso8601", _zoned("10.0.0.7", "2026-11-22T14:30:01+00:00"), "combined", _event()),
    GoodLine("ISO 8601, offset +05:30", _zoned("10.0.0.7", "2026-11-22T20:00:01+05:30"), "combined", _event()),
    GoodLine("ISO 8601 with ms and Z", _zoned("10.0.0.7", "2026-11-22T14:30:01.123Z"), "combined",
             _event(event_time=T + 123)),
    GoodLine("nginx escape=json, $request and strings",
             _line('{"time_local":"22/Nov/2026:14:30:01 +0000","remote_addr":"10.0.0.7","remote_user":"",'
                   '"request":"GET /index.html HTTP/1.1","status":"200","body_bytes_sent":"612",'
                   '"request_time":"0.000","http_referrer":"","http_user_agent":"curl/8.5.0"}'),
             "json", _event()),
    GoodLine("nginx escape=json, $time_iso8601 and numbers",
             _line('{"time_iso8601":"2026-11-22T14:30:01+00:00","remote_addr":"10.0.0.7","request_method":"GET",'
                   '"request_uri":"/caf\\u00e9","status":200,"body_bytes_sent":612,"http_user_agent":"curl/8.5.0"}'),
             "json", _event(path="/café")),
    GoodLine("Caddy access log (nested request, epoch-seconds float)",
             _line('{"level":"info","ts":1795357801.1234567,"logger":"http.log.access","msg":"handled request",'
                   '"request":{"remote_ip":"10.0.0.9","remote_port":"5432","client_ip":"10.0.0.7","proto":"HTTP/2.0",'
                   '"method":"GET","host":"example.com","uri":"/index.html","headers":{"User-Agent":["curl/8.5.0"]}},'
                   '"bytes_read":0,"duration":0.000123,"size":612,"status":200,"resp_headers":{}}'),
             "json", _event(event_time=T + 123)),
    GoodLine("Traefik access log",
             _line('{"ClientAddr":"10.0.0.7:5432","ClientHost":"10.0.0.7","DownstreamContentSize":612,'
                   '"DownstreamStatus":200,"RequestMethod":"GET","RequestPath":"/index.html",'
                   '"StartUTC":"2026-11-22T14:30:01.123456789Z","request_User-Agent":"curl/8.5.0"}'),
             "json", _event(event_time=T + 123)),
    GoodLine("JSON with only an ip and $msec", _line('  {"remote_addr":"::1","msec":"1795357801.123"}'),
             "json", _event("::1", method="", path="", status=0, size=0, agent="", event_time=T + 123)),
    GoodLine("JSON null fields count as absent",
             _line('{"time_local":null,"remote_addr":null,"client_ip":"10.0.0.7","msec":"1795357801.000",'
                   '"request":"GET /index.html HTTP/1.1","status":null,"body_bytes_sent":612,'
                   '"http_user_agent":"curl/8.5.0"}'),
             "json", _event(status=0)),
    GoodLine("Logstash @timestamp, bytes null",
             _line('{"@timestamp":"2026-11-22T14:30:01.000Z","client_ip":"10.0.0.7","method":"GET",'
                   '"path":"/index.html","status":200,"bytes":null,"user_agent":"curl/8.5.0"}'),
             "json", _event(size=0)),
    GoodLine("time-ip epoch ms", b"1795357801123 10.0.0.7", "time-ip",
             _event(method="", path="", status=0, size=0, agent="", event_time=T + 123)),
    GoodLine("time-ip ISO 8601", b"2026-11-22T14:30:01.123Z ::1", "time-ip",
             _event("::1", method="", path="", status=0, size=0, agent="", event_time=T + 123)),
)  # fmt: skip


BAD: tuple[BadLine, ...] = (
    BadLine("empty", b"", "empty", "empty line"),
    BadLine("blank", b"   \t", "empty", "empty line"),
    BadLine("only CR", b"\r", "empty", "empty line"),
    BadLine("not UTF-8", f'10.0.0.7 - - [{NOW}] "GET /'.encode() + b'\xe9 HTTP/1.1" 200 1', "not_utf8",
            "not UTF-8 at byte 48"),
    BadLine("bad day and month", b'10.0.0.7 - - [32/Foo/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
            "bad_timestamp", "bad timestamp '32/Foo/2026:10:00:00 +0000'"),
    BadLine("30 February", b'10.0.0.7 - - [30/Feb/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-"',
            "bad_timestamp", "bad timestamp '30/Feb/2026:10:00:00 +0000'"),
    BadLine("offset without sign", b'10.0.0.7 - - [22/Nov/2026:10:00:00 0000] "GET / HTTP/1.1" 200 1 "-" "-"',
            "bad_timestamp", "bad timestamp '22/Nov/2026:10:00:00 0000'"),
    BadLine("offset of 24 h", b'10.0.0.7 - - [22/Nov/2026:10:00:00 +2400] "GET / HTTP/1.1" 200 1 "-" "-"',
            "bad_timestamp", "bad timestamp '22/Nov/2026:10:00:00 +2400'"),
    BadLine("ISO time without an offset", b'10.0.0.7 - - [2026-11-22T10:00:00] "GET / HTTP/1.1" 200 1 "-" "-"',
            "bad_timestamp", "bad timestamp '2026-11-22T10:00:00'"),
    BadLine("ISO time, offset of 24 h", b'10.0.0.7 - - [2026-11-22T10:00:00+24:00] "GET / HTTP/1.1" 200 1',
            "bad_timestamp", "bad timestamp '2026-11-22T10:00:00+24:00'"),
    BadLine("status abc", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" abc 1 "-" "-"'.encode(), "bad_status",
            "status 'abc' is not a number"),
    BadLine("status of 4 digits", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 2000 1 "-" "-"'.encode(), "bad_status",
            "status '2000' is not 3 digits"),
    BadLine("bytes 12k", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 12k "-" "-"'.encode(), "bad_bytes",
            "byte count '12k' is not a number or '-'"),
    BadLine("bytes beyond a long", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 {1 << 63} "-" "-"'.encode(),
            "bad_bytes", "is too large"),
    BadLine("ip out of range", f'999.1.1.1 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "-"'.encode(), "bad_ip",
            "bad client ip '999.1.1.1'"),
    BadLine("host name for ip", f'example.com - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "-"'.encode(), "bad_ip",
            "bad client ip 'example.com'"),
    BadLine("time-ip bad ip", b"1795357801123 not-an-ip", "bad_ip", "bad client ip 'not-an-ip'", "time-ip"),
    BadLine("time-ip bad time", b"yesterday 10.0.0.7", "bad_timestamp", "bad timestamp 'yesterday'", "time-ip"),
    BadLine("time-ip after the year 9999 (beyond an Avro long)", b"99999999999999999999999 10.0.0.7", "bad_timestamp",
            "after the year 9999", "time-ip"),
    BadLine("time-ip one ms after 9999", b"253402300800000 10.0.0.7", "bad_timestamp", "after the year 9999",
            "time-ip"),
    BadLine("time-ip three words", b"a b c d", "unrecognised", "expected 'TIME IP', got 4 fields", "time-ip"),
    BadLine("unterminated user agent", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "Mozilla/5.0 (cut'.encode(),
            "bad_quoting", "unterminated quoted field"),
    BadLine("unterminated request", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1 200 1'.encode(),
            "bad_quoting", "unterminated quoted field"),
    BadLine("backslash before the closing quote", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "a\\"'.encode(),
            "bad_quoting", "unterminated quoted field"),
    BadLine("unescaped quote in request", f'10.0.0.7 - - [{NOW}] "GET /a"b HTTP/1.1" 200 1 "-" "-"'.encode(),
            "bad_quoting", "an unescaped quote inside the field?"),
    BadLine("unescaped quotes in user agent",
            f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "say "hi" now"'.encode(), "bad_quoting",
            "an unescaped quote inside the field?"),
    BadLine("only a referer", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-"'.encode(), "unrecognised",
            "expected 0 (common) or at least 2 (combined, main) quoted fields after the byte count, found 1"),
    BadLine("no bytes", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200'.encode(), "unrecognised",
            "not an access log line: no byte count after the request"),
    BadLine("unquoted user agent", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" curl'.encode(), "unrecognised",
            "expected 0 (common) or at least 2 (combined, main) quoted fields after the byte count, found 1"),
    BadLine("two spaces before the referer", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1  "-" "-"'.encode(),
            "unrecognised", """unexpected '"-" "-"' after the byte count"""),
    BadLine("unterminated extension field", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "-" 0.1 "cut'.encode(),
            "bad_quoting", "unterminated quoted field"),
    BadLine("quote inside an extension field", f'10.0.0.7 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "-" 0.1 "a"b'.encode(),
            "bad_quoting", "closes the extension field"),
    BadLine("client with a port", f'10.0.0.7:51234 - - [{NOW}] "GET / HTTP/1.1" 200 1 "-" "-"'.encode(), "bad_ip",
            "bad client ip '10.0.0.7:51234'"),
    BadLine("host:port and only two fields", f'www.example.com:80 10.0.0.7 - [{NOW}] "GET / HTTP/1.1" 200 1'.encode(),
            "bad_ip", "bad client ip 'www.example.com:80'"),
    BadLine("JSON cut short", b'{"remote_addr":"10.0.0.7","time":"2026-11-22T14:30:01Z","req', "unrecognised",
            "not a JSON object", "json"),
    BadLine("JSON array", b'["10.0.0.7", 1795357801123]', "unrecognised", "not a JSON object: a JSON array", "json"),
    BadLine("JSON too deep for the decoder", b"[" * 100_000 + b"]" * 100_000, "unrecognised",
            "maximum recursion depth", "json"),
    BadLine("JSON without a client ip", b'{"time":1795357801123,"status":200}', "bad_ip", "no client ip field",
            "json"),
    BadLine("JSON ip as a number", b'{"remote_addr":167772167,"time":1795357801123}', "bad_ip", "is not a string",
            "json"),
    BadLine("JSON host name for ip", b'{"remote_addr":"example.com","time":1795357801123}', "bad_ip",
            "bad client ip 'example.com'", "json"),
    BadLine("JSON without a time", b'{"remote_addr":"10.0.0.7","status":200}', "bad_timestamp", "no time field",
            "json"),
    BadLine("JSON time true", b'{"remote_addr":"10.0.0.7","time":true}', "bad_timestamp", "bad timestamp", "json"),
    BadLine("JSON time after 9999", b'{"remote_addr":"10.0.0.7","ts":1e300}', "bad_timestamp", "bad timestamp",
            "json"),
    BadLine("JSON status true", b'{"remote_addr":"10.0.0.7","time":1795357801123,"status":true}', "bad_status",
            "is not a number 0-999", "json"),
    BadLine("JSON status 1000", b'{"remote_addr":"10.0.0.7","time":1795357801123,"status":1000}', "bad_status",
            "is not a number 0-999", "json"),
    BadLine("JSON status 200.0", b'{"remote_addr":"10.0.0.7","time":1795357801123,"status":200.0}', "bad_status",
            "is not a number 0-999", "json"),
    BadLine("JSON bytes -1", b'{"remote_addr":"10.0.0.7","time":1795357801123,"body_bytes_sent":-1}', "bad_bytes",
            "is not a number or '-'", "json"),
    BadLine("HTML", b"<html><body>502 Bad Gateway</body></html>", "unrecognised", "not an access log line: expected"),
    BadLine("no brackets", f'10.0.0.7 - - {NOW} "GET / HTTP/1.1" 200 1'.encode(), "unrecognised",
            "not an access log line"),
)  # fmt: skip
