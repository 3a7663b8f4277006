"""Where the tailer is: which file (device + inode, plus a fingerprint of its first bytes, which
survives inode reuse) and the byte offset after the last line read."""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, replace
from typing import Any


def fingerprint(fd: int, length: int) -> str:
    """SHA-256 (hex, truncated) of the first ``length`` bytes of an open file."""
    return hashlib.sha256(os.pread(fd, length, 0)).hexdigest()[:32]


@dataclass(frozen=True)
class FilePosition:
    device: int
    inode: int
    fingerprint: str
    fingerprint_len: int
    offset: int

    @classmethod
    def of(cls, fd: int, offset: int, fingerprint_bytes: int) -> FilePosition:
        """The position ``offset`` in the open file ``fd``; fingerprints up to ``fingerprint_bytes`` bytes."""
        st = os.fstat(fd)
        length = min(fingerprint_bytes, st.st_size)
        return cls(st.st_dev, st.st_ino, fingerprint(fd, length), length, offset)

    def at(self, offset: int) -> FilePosition:
        return replace(self, offset=offset)

    def same_file(self, fd: int) -> bool:
        """Whether ``fd`` is the file this position is in: same device and inode and same first bytes."""
        st = os.fstat(fd)
        return (
            (st.st_dev, st.st_ino) == (self.device, self.inode)
            and st.st_size >= self.fingerprint_len
            and fingerprint(fd, self.fingerprint_len) == self.fingerprint
        )

    def same_content(self, fd: int) -> bool:
        """Whether ``fd`` starts with the same bytes (a copy made by copy-truncate rotation)."""
        st = os.fstat(fd)
        return (
            st.st_size >= max(self.offset, self.fingerprint_len)
            and fingerprint(fd, self.fingerprint_len) == self.fingerprint
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> FilePosition:
        return cls(
            int(doc["device"]),
            int(doc["inode"]),
            str(doc["fingerprint"]),
            int(doc["fingerprint_len"]),
            int(doc["offset"]),
        )
