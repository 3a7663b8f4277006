"""Compressed access logs: the tailer and the audit read plain text, so a file named on the command
line that is compressed (a rotated ``access.log.2.gz``) is refused with what to do, instead of
becoming one dead letter per block of compressed bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["compressed_input_reason"]

#: (leading bytes, format, the command that writes it out as text).
_MAGIC: Final = (
    (b"\x1f\x8b\x08", "gzip", "zcat"),
    (b"\xfd7zXZ\x00", "xz", "xzcat"),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat"),
)
_BZIP2_BLOCK: Final = b"1AY&SY"


def compressed_input_reason(path: Path) -> str | None:
    """Why ``path`` cannot be read as an access log when it starts like a gzip, bzip2, xz or zstd
    file; None for anything else (a file that cannot be read is left to the reader to report)."""
    try:
        with path.open("rb") as file:
            head = file.read(10)
    except OSError:
        return None
    found = next(((kind, tool) for magic, kind, tool in _MAGIC if head.startswith(magic)), None)
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] == _BZIP2_BLOCK:
        found = ("bzip2", "bzcat")
    if found is None:
        return None
    kind, tool = found
    return f"{path} is {kind}-compressed and access logs are read as text: decompress it first ({tool} {path} > FILE)"
