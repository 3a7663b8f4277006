"""LineParser: the bytes of one line to an AccessEvent, or MalformedLine with its kind and reason.

Formats (the ``format`` setting of ``access-log-file``):

- ``auto`` (default): per file, decided by its first line that fits (:mod:`.detect`): any of the
  httpd formats below, ``json`` or ``time-ip``;
- ``common``: Apache ``%h %l %u %t "%r" %>s %b``;
- ``combined``: Apache and nginx ``combined``, common + ``"referer" "user-agent"``;
- ``main``: nginx's default, combined + ``"x-forwarded-for"``;
- ``json``: one JSON object per line (nginx ``escape=json``, Caddy, Traefik; :mod:`.json_lines`);
- ``time-ip``: the reference lesson's ``TIME IP`` (:mod:`.time_ip`).

Before any format: a line of ``max_line_bytes`` or more is ``too_long`` (the tailer hands on a longer
line in pieces of that size), one trailing CR is dropped, a blank line is ``empty``, and a line that
is not UTF-8 is ``not_utf8``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.detect import FormatDetector
from onceflow.logproducer.formats.errors import MalformedKind, MalformedLine
from onceflow.logproducer.formats.httpd import HTTPD_FORMATS, parse_httpd
from onceflow.logproducer.formats.json_lines import parse_json
from onceflow.logproducer.formats.time_ip import parse_time_ip

__all__ = ["DEFAULT_MAX_LINE_BYTES", "FORMATS", "LineParser", "MalformedLine", "decode_line"]

FORMATS: Final = ("auto", *HTTPD_FORMATS, "json", "time-ip")
#: The tailer's default ``max.line.bytes``.
DEFAULT_MAX_LINE_BYTES: Final = 1 << 20


class LineParser:
    """Parses the lines of one file in one format; with ``auto`` it decides the format from the file's
    first fitting line (call :meth:`reset` when a new file starts)."""

    def __init__(self, fmt: str = "auto", *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
        self.format = fmt
        self.max_line_bytes = max_line_bytes
        self._detector = FormatDetector() if fmt == "auto" else None
        self._parse: Callable[[str], AccessEvent] = self._parser_for(fmt)

    def _parser_for(self, fmt: str) -> Callable[[str], AccessEvent]:
        if fmt == "json":
            return parse_json
        if fmt == "time-ip":
            return parse_time_ip
        if fmt in HTTPD_FORMATS or fmt == "httpd":
            return functools.partial(parse_httpd, fmt=fmt)
        return self._detect

    def _detect(self, line: str) -> AccessEvent:
        assert self._detector is not None
        event = self._detector.parse(line)
        if self._detector.decided is not None:  # from now on straight to the decided grammar
            self._parse = self._parser_for(self._detector.decided)
        return event

    @property
    def detected(self) -> str | None:
        """With ``auto``: the grammar decided for the current file (``httpd``, ``time-ip``, or None yet)."""
        return self._detector.decided if self._detector is not None else self.format

    def reset(self) -> None:
        """A new file starts (``auto`` decides again)."""
        if self._detector is not None:
            self._detector.reset()
            self._parse = self._detect

    def parse(self, raw: bytes) -> AccessEvent:
        """Parse one line (without its newline; one trailing CR is ignored)."""
        return self._parse(decode_line(raw, self.max_line_bytes))


def decode_line(raw: bytes, max_line_bytes: int) -> str:
    """The text of one line (without its newline), after the checks every line gets before any format:
    ``too_long``, one trailing CR dropped, ``empty``, ``not_utf8``."""
    if len(raw) >= max_line_bytes:
        raise MalformedLine(
            f"line of {len(raw)} bytes reaches max.line.bytes ({max_line_bytes}): a piece of a longer line",
            MalformedKind.TOO_LONG,
        )
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if not raw or raw.isspace():
        raise MalformedLine("empty line", MalformedKind.EMPTY)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedLine(f"not UTF-8 at byte {exc.start}", MalformedKind.NOT_UTF8) from None
