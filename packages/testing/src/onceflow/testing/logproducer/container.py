"""Container log files as the runtimes write them, for tests: Docker's ``json-file`` driver and the
CRI format of Kubernetes (containerd, CRI-O).

Both split a line longer than their buffer (16 KiB) into pieces: Docker's pieces have no newline at
the end of ``log`` but the last; CRI's are tagged ``P`` but the last (``F``). Docker's entries are
encoded as Go's ``encoding/json`` does: ``<``, ``>`` and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Final

__all__ = ["PIECE_BYTES", "cri_entries", "docker_entries", "entry_time"]

#: The runtimes' buffer: a longer line is written in pieces of this many bytes.
PIECE_BYTES: Final = 16 * 1024
_START = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)


def entry_time(n: int) -> str:
    """The runtime's own time of the ``n``-th entry: RFC 3339 with nanoseconds."""
    moment = _START + timedelta(microseconds=n * 1500)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


def _pieces(line: str, piece_bytes: int) -> list[str]:
    data = line.encode()
    pieces, start = [], 0
    while len(data) - start > piece_bytes:
        end = start + piece_bytes
        while end > start and (data[end] & 0xC0) == 0x80:  # not inside a character
            end -= 1
        pieces.append(data[start:end].decode())
        start = end
    pieces.append(data[start:].decode())
    return pieces


def docker_entries(line: str, stream: str = "stdout", n: int = 0, piece_bytes: int = PIECE_BYTES) -> list[bytes]:
    """The json-file lines (no newline) of one line the container wrote."""
    pieces = _pieces(line, piece_bytes)
    entries = []
    for i, piece in enumerate(pieces):
        text = piece + ("\n" if i == len(pieces) - 1 else "")
        encoded = json.dumps(
            {"log": text, "stream": stream, "time": entry_time(n + i)}, separators=(",", ":"), ensure_ascii=False
        )
        for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            encoded = encoded.replace(char, escape)
        entries.append(encoded.encode())
    return entries


def cri_entries(line: str, stream: str = "stdout", n: int = 0, piece_bytes: int = PIECE_BYTES) -> list[bytes]:
    """The CRI lines (no newline) of one line the container wrote."""
    pieces = _pieces(line, piece_bytes)
    return [
        f"{entry_time(n + i)} {stream} {'F' if i == len(pieces) - 1 else 'P'} {piece}".encode()
        for i, piece in enumerate(pieces)
    ]
