"""LineParser: bytes of one line to an AccessEvent, or MalformedLine with the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats.combined import parse_combined
from onceflow.logproducer.formats.errors import MalformedLine
from onceflow.logproducer.formats.time_ip import parse_time_ip

__all__ = ["FORMATS", "LineParser", "MalformedLine"]

FORMATS: Final = ("auto", "combined", "time-ip")


def _auto(line: str) -> AccessEvent:
    """combined when the line has a ``[time]`` and a quoted request, else "time ip"."""
    if "[" in line and '"' in line:
        return parse_combined(line)
    return parse_time_ip(line)


class LineParser:
    def __init__(self, fmt: str = "auto") -> None:
        parsers: dict[str, Callable[[str], AccessEvent]] = {
            "auto": _auto,
            "combined": parse_combined,
            "time-ip": parse_time_ip,
        }
        if fmt not in parsers:
            raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
        self._parse = parsers[fmt]

    def parse(self, raw: bytes) -> AccessEvent:
        """Parse one line (without its newline; a trailing CR is ignored)."""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedLine(f"not UTF-8 at byte {exc.start}") from None
        line = line.rstrip("\r")
        if not line.strip():
            raise MalformedLine("empty line")
        return self._parse(line)
