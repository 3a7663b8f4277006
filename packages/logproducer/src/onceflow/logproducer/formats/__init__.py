"""Access-log line formats: Apache ``common``/``combined``, nginx ``combined``/``main``, JSON lines
(nginx ``escape=json``, Caddy, Traefik), and the reference lesson's minimal "time ip"; ``auto``
decides per file. See :mod:`.parser` for the list,
:mod:`.httpd` for the grammar and :mod:`.escapes` for what quoted fields may hold.

Malformed lines raise :class:`MalformedLine` with a human ``reason`` and a stable ``kind``
(:class:`MalformedKind`: empty, not_utf8, too_long, bad_quoting, bad_timestamp, bad_ip, bad_status,
bad_bytes, unrecognised).
"""

from onceflow.logproducer.formats.detect import GRAMMARS, FormatDetector
from onceflow.logproducer.formats.errors import KINDS, MalformedKind, MalformedLine
from onceflow.logproducer.formats.escapes import unescape
from onceflow.logproducer.formats.httpd import HTTPD_FORMATS, parse_httpd
from onceflow.logproducer.formats.json_lines import parse_json
from onceflow.logproducer.formats.parser import DEFAULT_MAX_LINE_BYTES, FORMATS, LineParser
from onceflow.logproducer.formats.time_ip import parse_time_ip

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "FORMATS",
    "GRAMMARS",
    "HTTPD_FORMATS",
    "KINDS",
    "FormatDetector",
    "LineParser",
    "MalformedKind",
    "MalformedLine",
    "parse_httpd",
    "parse_json",
    "parse_time_ip",
    "unescape",
]
