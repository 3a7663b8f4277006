"""Escapes inside the quoted fields of nginx and Apache httpd access logs.

- nginx (``log_format ... escape=default``) writes ``"``, ``\\``, bytes below 0x20 and above 0x7E
  as ``\\xHH`` (e.g. ``\\x22`` for a quote);
- Apache httpd (``ap_escape_logitem``, 2.0.46+) writes ``\\"`` and ``\\\\``, whitespace controls in C
  style (``\\b \\n \\r \\t \\v \\f``) and other non-printable bytes as ``\\xhh``.

:func:`unescape` undoes both. ``\\xHH`` stands for a byte: the bytes of a field are decoded as UTF-8,
and a byte sequence that is not UTF-8 is kept as ``\\xhh`` text (``errors="backslashreplace"``), so
the result is always a valid ``str``. A backslash before any other character is kept as written.
"""

from __future__ import annotations

import re

__all__ = ["unescape"]

_ESCAPE = re.compile(rb"\\(x[0-9A-Fa-f]{2}|.)", re.DOTALL)
_SIMPLE = {
    b'"': b'"', b"\\": b"\\", b"n": b"\n", b"t": b"\t", b"r": b"\r", b"b": b"\b", b"v": b"\v", b"f": b"\f",
}  # fmt: skip


def _byte(match: re.Match[bytes]) -> bytes:
    escape = match[1]
    if len(escape) == 3:
        return bytes((int(escape[1:], 16),))
    return _SIMPLE.get(escape, match[0])


def unescape(field: str) -> str:
    """The text of a quoted field as written between its quotes (escapes undone, see the module docstring)."""
    if "\\" not in field:
        return field
    return _ESCAPE.sub(_byte, field.encode()).decode("utf-8", "backslashreplace")
