"""The file reader follows rename and copy-truncate rotation and resumes from a position."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from onceflow.core.confinement import PathNotAllowed
from onceflow.logproducer.tailer import FilePosition, RotatingFileReader


def _append(path: Path, *lines: str, newline: bool = True) -> None:
    with path.open("a") as fh:
        fh.write("\n".join(lines) + ("\n" if newline else ""))


def _read_all(reader: RotatingFileReader) -> list[str]:
    out: list[str] = []
    while batch := reader.read(3):
        out.extend(line.data.decode() for line in batch)
    return out


def test_complete_lines_only_until_the_newline_arrives(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    _append(log, "a", "b")
    _append(log, "partial", newline=False)
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    assert _read_all(reader) == ["a", "b"]
    _append(log, "-done")
    assert _read_all(reader) == ["partial-done"]


def test_a_line_longer_than_max_line_bytes_comes_in_pieces_wherever_its_newline_is(tmp_path: Path) -> None:
    """Pieces of max.line.bytes, whether or not the newline is in the bytes read at once (the read
    size is 1 MiB; max.line.bytes may be far smaller)."""
    log = tmp_path / "access.log"
    _append(log, "a", "x" * 250, "b", "y" * 100, "z" * 101)
    reader = RotatingFileReader(log, allowed=[tmp_path], max_line_bytes=100)
    reader.open(None)
    lines = reader.read(100)
    assert [len(line.data) for line in lines] == [1, 100, 100, 50, 1, 100, 100, 1]
    assert lines[3].position.offset == 2 + 251, "a piece's position is where the next piece starts"


def test_rename_rotation_finishes_the_old_file_first(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    _append(log, "1", "2")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    assert _read_all(reader) == ["1", "2"]
    _append(log, "3")
    _append(log, "4-no-newline", newline=False)
    os.rename(log, tmp_path / "access.log.1")
    _append(log, "5")
    assert _read_all(reader) == ["3", "4-no-newline", "5"]


def test_copy_truncate_reads_the_rest_from_the_copy(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    _append(log, "1", "2")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    assert _read_all(reader) == ["1", "2"]
    _append(log, "3", "4")
    shutil.copyfile(log, tmp_path / "access.log.1")
    os.truncate(log, 0)
    _append(log, "5", "6", "7", "8", "9")  # longer than before: only the first bytes tell
    assert _read_all(reader) == ["3", "4", "5", "6", "7", "8", "9"]


def test_resume_finds_a_rotated_file_by_inode_and_fingerprint(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    _append(log, "first", "second")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    first = reader.read(1)
    position = FilePosition.from_dict(first[0].position.to_dict())
    reader.close()
    os.rename(log, tmp_path / "access.log.1")
    _append(log, "third")
    again = RotatingFileReader(log, allowed=[tmp_path])
    again.open(position)
    assert _read_all(again) == ["second", "third"]
    assert again.lost_positions == 0


def test_resume_after_copy_truncate_uses_the_copy(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    _append(log, "first", "second")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    position = reader.read(1)[0].position
    reader.close()
    shutil.copyfile(log, tmp_path / "access.log.1")
    os.truncate(log, 0)
    _append(log, "third")
    again = RotatingFileReader(log, allowed=[tmp_path])
    again.open(position)
    assert _read_all(again) == ["second", "third"]


def test_inode_reuse_is_caught_by_the_fingerprint(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    _append(log, "old-1", "old-2")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    position = reader.read(1)[0].position
    reader.close()
    log.unlink()
    _append(log, "new-1", "new-2")  # may well get the same inode back
    again = RotatingFileReader(log, allowed=[tmp_path])
    again.open(position)
    assert _read_all(again) == ["new-1", "new-2"]
    assert again.lost_positions == 1


def test_a_path_swapped_outside_at_rotation_is_refused_after_the_rotated_file(tmp_path: Path) -> None:
    logs, outside = tmp_path / "logs", tmp_path / "outside"
    logs.mkdir()
    outside.mkdir()
    _append(outside / "secret", "secret")
    log = logs / "access.log"
    _append(log, "1", "2")
    reader = RotatingFileReader(log, allowed=[logs])
    reader.open(None)
    position = reader.read(1)[0].position
    assert reader.read(1)[0].data == b"2"
    _append(log, "3")
    os.rename(log, logs / "access.log.1")
    log.symlink_to(outside / "secret")
    assert [line.data for line in reader.read(10)] == [b"3"]  # the rest of the rotated file first
    assert reader.refused is not None
    with pytest.raises(PathNotAllowed, match=r"access\.log' is not allowed: it resolves outside"):
        reader.read(10)

    # resuming finishes the rotated file too, then refuses the path
    again = RotatingFileReader(log, allowed=[logs])
    again.open(position)
    assert [line.data for line in again.read(10)] == [b"2", b"3"]
    with pytest.raises(PathNotAllowed):
        again.read(10)
    with pytest.raises(PathNotAllowed):
        RotatingFileReader(log, allowed=[logs]).open(None)
