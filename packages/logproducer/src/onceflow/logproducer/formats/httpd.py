r"""The stock access-log formats of nginx and Apache httpd, as one grammar::

    [vhost:port] ip ident user [dd/Mon/yyyy:HH:MM:SS +hhmm] "request" status bytes ( "quoted")* (extension)*

- Apache ``common``: ``%h %l %u %t "%r" %>s %b``: no quoted field after the byte count;
- ``combined`` (Apache and nginx): ``... "%{Referer}i" "%{User-agent}i"``: at least two (referer,
  user agent);
- nginx ``main`` (its default): combined plus ``"$http_x_forwarded_for"``: at least three;
- Apache ``vhost_combined`` (Debian's ``other_vhosts_access.log``): ``%v:%p`` before any of them.
  The ``host:port`` is taken as the virtual host only where four fields precede the ``[time]``.

Further trailing quoted fields are ignored, so one line may fit several formats; the user agent is
always the second trailing field ("" when there is none). So are *extension fields*: whatever a
custom ``log_format`` or ``LogFormat`` appends after those, such as nginx's ``$request_time
$upstream_response_time`` or Apache's ``%D``. They are separated by spaces or tabs, the first one
is not quoted, and a quoted one among them must be closed. ip, ident and user are runs of non-space
characters; trailing spaces and tabs at the end of a line are ignored.

Inside quoted fields ``\"`` and ``\\`` and the other escapes of :mod:`.escapes` are accepted and
decoded. The request line becomes ``(method, path)`` by :func:`.fields.split_request`; it never makes
a line malformed (``-``, ``""``, HTTP/0.9 and escaped junk are events). The status is any three
digits, the byte count digits or ``-`` (0), the time is any UTC offset, kept to the second.

A line is checked in this order, and the first problem found is its reason: the shape (quoted fields
closed; a closing quote followed by neither whitespace nor the end of the line is ``bad_quoting``,
an unescaped quote inside a field; anything else out of shape is ``unrecognised``), the number of
trailing quoted fields the format needs, the client ip, the time, the status, the byte count.
"""

from __future__ import annotations

import re
from typing import Final, NoReturn

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.errors import MalformedKind, MalformedLine, shown
from onceflow.logproducer.formats.escapes import unescape
from onceflow.logproducer.formats.fields import (
    STATUSES,
    VALID_IPS,
    check_ip,
    parse_bytes,
    parse_status,
    split_request,
    time_local_ms,
)

__all__ = ["HTTPD_FORMATS", "MIN_TRAILING_FIELDS", "parse_httpd"]

#: The trailing quoted fields each format needs: exactly none, or at least n. ``httpd`` is any
#: httpd line (what ``auto`` accepts once a file is known to be an access log): 0 or at least 2.
MIN_TRAILING_FIELDS: Final = {"common": 0, "combined": 2, "main": 3, "httpd": 0}
HTTPD_FORMATS: Final = ("common", "combined", "main")

_QUOTED = r'[^"\\]*+(?:\\.[^"\\]*+)*+'
#: Apache's ``%v:%p`` before the client (``vhost_combined``): taken only where four fields precede ``[``.
_VHOST = r'[^\s"]+:[0-9]+ '
#: Extension fields: the first unquoted, any later one unquoted or a closed quoted field.
_EXTENSION = rf'(?:[ \t]++[^"\s]\S*+(?:[ \t]++(?:[^"\s]\S*+|"{_QUOTED}"))*+)?+'
#: The fast path: one match per line. A plain ``METHOD PATH HTTP/x`` request (no space, quote or
#: backslash in it) is split by the pattern itself; any other request is the generic quoted group.
#: After the request every quantifier is possessive: a field, once matched, is never given back to
#: another part of the pattern (no other split of a line could match), so a line that does not
#: match fails in linear time, however many fields it has.
_LINE = re.compile(
    rf'(?:{_VHOST})?(\S+) \S+ \S+ \[([^\]]*)\] "(?:([A-Za-z][A-Za-z0-9_-]*) ([^ "\\]+) HTTP/[^ "\\]*|({_QUOTED}))"'
    rf' (\S++) (\S++)(?: "({_QUOTED})")?+(?: "({_QUOTED})")?+(?: "({_QUOTED})")?+((?: "{_QUOTED}")*+)'
    rf"{_EXTENSION}[ \t]*",
    re.DOTALL,
)
_VHOST_PREFIX = re.compile(rf"{_VHOST}(?=\S+ \S+ \S+ \[)")
_BLANKS = re.compile(r"[ \t]*")
_NON_SPACE = re.compile(r"\S*")
_TRAILING = re.compile(rf' "{_QUOTED}"', re.DOTALL)
_EXPECTED = (
    "expected [VHOST:PORT] IP IDENT USER [dd/Mon/yyyy:HH:MM:SS +hhmm]"
    ' "REQUEST" STATUS BYTES ["REFERER" "USER-AGENT" ...] [EXTENSION ...]'
)
_FIELDS_NEEDED = {
    "common": "no quoted field after the byte count (common)",
    "combined": 'at least 2 quoted fields after the byte count ("referer" "user-agent")',
    "main": 'at least 3 quoted fields after the byte count ("referer" "user-agent" "x-forwarded-for")',
    "httpd": "0 (common) or at least 2 (combined, main) quoted fields after the byte count",
}


def parse_httpd(line: str, fmt: str = "httpd") -> AccessEvent:
    """The event of one line (no newline) in ``fmt`` (``common``, ``combined``, ``main`` or ``httpd``)."""
    match = _LINE.fullmatch(line)
    if match is None:
        _diagnose(line)
    ip, time_text, method, path, request, status, size, referer, agent, forwarded, extra = match.groups()
    if (referer is not None and agent is None) or fmt != "httpd":
        trailing = 0 if referer is None else 1 if agent is None else 2 if forwarded is None else 3
        if trailing == 3 and extra:
            trailing += len(_TRAILING.findall(extra))
        if not _enough_fields(fmt, trailing):
            raise MalformedLine(f"expected {_FIELDS_NEEDED[fmt]}, found {trailing}", MalformedKind.UNRECOGNISED)
    if ip not in VALID_IPS:
        check_ip(ip)
    event_time = time_local_ms(time_text)
    if method is None:
        method, path = split_request(unescape(request))
    return {
        "event_time": event_time,
        "ip": ip,
        "method": method,
        "path": path,
        "status": STATUSES.get(status) or parse_status(status),
        "bytes": int(size) if size.isdigit() and size.isascii() and len(size) < 19 else parse_bytes(size),
        "user_agent": "" if agent is None else unescape(agent),
    }


def _enough_fields(fmt: str, trailing: int) -> bool:
    if fmt == "common":
        return trailing == 0
    return trailing != 1 and trailing >= MIN_TRAILING_FIELDS[fmt]


def _closing_quote(line: str, start: int) -> int:
    """Index of the quote closing the field that starts at ``start`` (just after its opening quote)."""
    i = start
    while True:
        quote = line.find('"', i)
        if quote < 0:
            raise MalformedLine("unterminated quoted field", MalformedKind.BAD_QUOTING)
        backslash = line.find("\\", i, quote)
        if backslash < 0:
            return quote
        i = backslash + 2


def _after_quoted(line: str, start: int, what: str) -> int:
    """Index just after the quoted field opened at ``start - 1``; checks what follows its closing quote."""
    end = _closing_quote(line, start) + 1
    if end < len(line) and not line[end].isspace():
        raise MalformedLine(
            f"quote at character {end - 1} closes the {what} but is followed by {shown(line[end : end + 20])}:"
            " an unescaped quote inside the field?",
            MalformedKind.BAD_QUOTING,
        )
    return end


def _token(line: str, start: int) -> int:
    """End of the run of non-space characters at ``start`` (== start when there is none)."""
    match = _NON_SPACE.match(line, start)
    assert match is not None
    return match.end()


def _diagnose(line: str) -> NoReturn:
    """Raise the reason why ``line`` is out of shape (only called when the fast pattern did not match)."""
    # Step 1: the virtual host, if four fields precede the [time]; then ip, ident and user, each
    # followed by one space
    vhost = _VHOST_PREFIX.match(line)
    i = vhost.end() if vhost is not None else 0
    for _ in range(3):
        end = _token(line, i)
        if end == i or not line.startswith(" ", end):
            raise MalformedLine(f"not an access log line: {_EXPECTED}")
        i = end + 1
    # Step 2: the [time]
    close = line.find("]", i)
    if not line.startswith("[", i) or close < 0:
        raise MalformedLine(f"not an access log line: no [time] after the user; {_EXPECTED}")
    i = close + 1
    # Step 3: the quoted request, then " STATUS BYTES"
    if not line.startswith(' "', i):
        raise MalformedLine(f'not an access log line: no "request" after the time; {_EXPECTED}')
    i = _after_quoted(line, i + 2, "request")
    for name in ("status", "byte count"):
        end = _token(line, i + 1)
        if not line.startswith(" ", i) or end == i + 1:
            raise MalformedLine(f"not an access log line: no {name} after the request; {_EXPECTED}")
        i = end
    # Step 4: the trailing quoted fields
    while line.startswith(' "', i):
        i = _after_quoted(line, i + 2, "quoted field")
    # Step 5: extension fields (the first one unquoted, quoted ones closed), then nothing but blanks
    first = True
    while (start := _blanks_end(line, i)) < len(line):
        if start == i or (first and line.startswith('"', start)):
            raise MalformedLine(f"unexpected {shown(line[i:].lstrip(' '))} after the byte count: {_EXPECTED}")
        i = _after_quoted(line, start + 1, "extension field") if line.startswith('"', start) else _token(line, start)
        first = False
    raise MalformedLine(f"not an access log line: {_EXPECTED}")


def _blanks_end(line: str, start: int) -> int:
    """End of the run of spaces and tabs at ``start``."""
    match = _BLANKS.match(line, start)
    assert match is not None
    return match.end()
