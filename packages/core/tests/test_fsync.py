"""``replace_durably``: the one atomic, durable file replacement the services use."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from onceflow.core.fsync import replace_durably


def test_replaces_the_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old")
    replace_durably(path, b"new")
    assert path.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_creates_the_file_with_the_mode_given(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    replace_durably(path, b"{}", mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "bound"
    path.write_bytes(b"1000\n")
    tmp = tmp_path / "bound.tmp"
    tmp.mkdir()  # opening it for writing fails
    with pytest.raises(OSError):
        replace_durably(path, b"2000\n", tmp=tmp)
    assert path.read_bytes() == b"1000\n"
