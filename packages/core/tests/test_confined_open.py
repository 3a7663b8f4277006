"""open_confined checks the file it opened, not only the path it was given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from onceflow.core.confined_open import open_confined
from onceflow.core.confinement import PathNotAllowed


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "a.log").write_text("inside\n")
    (outside / "secret").write_text("secret\n")
    return inside, outside


def read(fd: int) -> bytes:
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


def test_a_file_inside_is_opened_also_through_a_symlink_inside(tree: tuple[Path, Path]) -> None:
    inside, _ = tree
    (inside / "link.log").symlink_to(inside / "a.log")
    assert read(open_confined(inside / "a.log", [inside])) == b"inside\n"
    assert read(open_confined(inside / "link.log", [inside])) == b"inside\n"


def test_a_symlink_or_a_directory_leading_outside_is_refused(tree: tuple[Path, Path]) -> None:
    inside, outside = tree
    (inside / "escape.log").symlink_to(outside / "secret")
    (inside / "dir").symlink_to(outside)
    for path in (inside / "escape.log", inside / "dir" / "secret", inside / ".." / "outside" / "secret"):
        with pytest.raises(PathNotAllowed, match="resolves outside the allowed directories"):
            open_confined(path, [inside])


def test_a_fifo_is_refused_without_blocking(tree: tuple[Path, Path]) -> None:
    inside, _ = tree
    os.mkfifo(inside / "pipe")
    with pytest.raises(PathNotAllowed, match="not a regular file"):
        open_confined(inside / "pipe", [inside])


def test_a_missing_file_is_the_open_error(tree: tuple[Path, Path]) -> None:
    inside, _ = tree
    with pytest.raises(FileNotFoundError):
        open_confined(inside / "nope.log", [inside])
    with pytest.raises(PathNotAllowed, match="no directories are allowed"):
        open_confined(inside / "a.log", [])
