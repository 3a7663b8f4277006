"""Client-chosen text (``client_id``, ``group_id``, member and transactional ids, topic names) reaches
the broker's log lines; :class:`EscapeControlCharacters` keeps it from forging or hiding lines.

Every control character (C0, DEL, C1, and the Unicode line and paragraph separators) in a record's
message and in its structured fields is written as a Python-style escape (``\\n``, ``\\x1b``,
``\\u2028``), so each log record stays exactly one line and a client cannot start a line of its own
or smuggle terminal escape sequences. Tracebacks, which the broker itself produces, are untouched.
"""

from __future__ import annotations

import logging
import re

_FIELDS_ATTR = "onceflow_fields"  # where onceflow.core.logging.StructuredLogger keeps its fields
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def escape_control_characters(text: str) -> str:
    """``text`` with every control character escaped (see module docs)."""
    return _CONTROL.sub(_escape_one, text)


class EscapeControlCharacters(logging.Filter):
    """A handler filter that escapes control characters in every record it passes (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if _CONTROL.search(message):
            record.msg, record.args = escape_control_characters(message), None
        fields = getattr(record, _FIELDS_ATTR, None)
        if isinstance(fields, dict) and any(_CONTROL.search(str(v)) for v in fields.values()):
            # any value is rendered with str() (an exception's message, a name in a list): escape that
            setattr(
                record,
                _FIELDS_ATTR,
                {k: escape_control_characters(str(v)) if _CONTROL.search(str(v)) else v for k, v in fields.items()},
            )
        return True


def escape_log_lines() -> None:
    """Add :class:`EscapeControlCharacters` to every handler of the root logger (once each)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, EscapeControlCharacters) for f in handler.filters):
            handler.addFilter(EscapeControlCharacters())
