"""FormatDetector: ``format = auto``, decided per file by its first line that fits a known grammar.

There are three grammars: ``httpd`` (any line of Apache ``common``/``combined`` or nginx
``combined``/``main``, see :mod:`.httpd`), ``json`` (a JSON object per line, see :mod:`.json_lines`)
and ``time-ip``. Until a line fits one of them, each line is tried: a line that starts with ``{`` as
JSON, any other against httpd and time-ip; the first that fits decides the file's grammar, and from
then on only that grammar is used. A line that fits none is malformed (a dead letter) and does not
decide or switch anything. ``auto`` does not pin common, combined or main: a reload of the server
with a new ``log_format`` changes the shape mid-file, and every stock shape is an event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.errors import MalformedLine
from onceflow.logproducer.formats.httpd import parse_httpd
from onceflow.logproducer.formats.json_lines import parse_json
from onceflow.logproducer.formats.time_ip import parse_time_ip

__all__ = ["GRAMMARS", "FormatDetector"]

#: What ``auto`` can decide for a file.
GRAMMARS: Final = ("httpd", "json", "time-ip")


class FormatDetector:
    """Parses the lines of one file (decoded, no newline) with the grammar its first fitting line decides."""

    def __init__(self) -> None:
        self.decided: str | None = None

    def reset(self) -> None:
        """A new file begins: decide again."""
        self.decided = None

    def parse(self, line: str) -> AccessEvent:
        if self.decided == "httpd":
            return parse_httpd(line)
        if self.decided == "time-ip":
            return parse_time_ip(line)
        if self.decided == "json" or line.lstrip().startswith("{"):
            event = parse_json(line)
            self.decided = "json"
            return event
        try:
            event = parse_httpd(line)
        except MalformedLine as httpd_error:
            try:
                event = parse_time_ip(line)
            except MalformedLine as time_ip_error:
                # The reason of the grammar the line was probably meant for.
                raise httpd_error if "[" in line and '"' in line else time_ip_error from None
            self.decided = "time-ip"
            return event
        self.decided = "httpd"
        return event

    def detect(self, lines: Iterable[str]) -> str | None:
        """Decide from ``lines`` (the first lines of a file): the grammar, or None when no line fits."""
        for line in lines:
            if self.decided is not None:
                break
            try:
                self.parse(line)
            except MalformedLine:
                continue
        return self.decided
