"""ClassArchive: its name follows the JVM and the jars, it is installed whole or not at all, and only a
file this user alone can write is mapped. (A real JVM mapping one: the Spark and Kafka fixture tests.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from onceflow.core.process.class_archive import DIR_ENV, ClassArchive


@pytest.fixture
def archive(tmp_path: Path) -> ClassArchive:
    java = tmp_path / "java"
    java.write_bytes(b"java")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "a.jar").write_bytes(b"a")
    return ClassArchive.of("tool", java, jars, {DIR_ENV: str(tmp_path / "archives")})


def dump_to(option: str) -> Path:
    assert option.startswith("-XX:ArchiveClassesAtExit=")
    return Path(option.partition("=")[2])


def test_a_warm_up_that_dumps_installs_a_private_archive(archive: ClassArchive) -> None:
    assert not archive.usable()
    path = archive.write(lambda option: dump_to(option).write_bytes(b"classes"))
    assert path == archive.path and path.read_bytes() == b"classes"
    assert archive.usable() and archive.option() == f"-XX:SharedArchiveFile={path}"
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert archive.write(lambda option: pytest.fail("an archive that exists is not written again")) == path


def test_a_warm_up_that_dumps_nothing_or_fails_installs_nothing(archive: ClassArchive) -> None:
    with pytest.raises(RuntimeError, match="wrote no class archive"):
        archive.write(lambda option: None)

    def crash(option: str) -> None:
        dump_to(option).write_bytes(b"half")
        raise RuntimeError("warm-up died")

    with pytest.raises(RuntimeError, match="warm-up died"):
        archive.write(crash)
    assert not archive.path.exists() and list(archive.path.parent.iterdir()) == []


def test_partial_archives_of_dead_warm_ups_are_removed_and_a_live_ones_kept(archive: ClassArchive) -> None:
    archive.path.parent.mkdir(mode=0o700)
    dead = archive.path.with_name(f".{archive.path.name}.{2**22 + 12345}.partial")
    live = archive.path.with_name(f".{archive.path.name}.{os.getppid()}.partial")
    dead.write_bytes(b"x")
    live.write_bytes(b"x")
    archive.write(lambda option: dump_to(option).write_bytes(b"classes"))
    assert not dead.exists() and live.exists()


def test_an_archive_others_can_write_or_a_link_is_not_mapped(archive: ClassArchive, tmp_path: Path) -> None:
    archive.write(lambda option: dump_to(option).write_bytes(b"classes"))
    archive.path.chmod(0o664)
    assert not archive.usable()
    archive.path.chmod(0o644)
    assert archive.usable()
    archive.path.parent.chmod(0o777)  # anyone could swap the file
    assert not archive.usable()
    archive.path.parent.chmod(0o700)
    assert archive.usable()
    archive.path.unlink()
    archive.path.symlink_to(tmp_path / "java")
    assert not archive.usable()


def test_the_name_follows_the_jvm_and_the_jars(archive: ClassArchive, tmp_path: Path) -> None:
    environ = {DIR_ENV: str(tmp_path / "archives")}
    assert ClassArchive.of("tool", tmp_path / "java", tmp_path / "jars", environ) == archive
    assert ClassArchive.of("other", tmp_path / "java", tmp_path / "jars", environ) != archive
    # the same jars elsewhere (another checkout, another virtualenv): another class path, another archive
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a.jar").write_bytes(b"a")
    assert ClassArchive.of("tool", tmp_path / "java", tmp_path / "other", environ) != archive
    (tmp_path / "jars" / "b.jar").write_bytes(b"b")
    assert ClassArchive.of("tool", tmp_path / "java", tmp_path / "jars", environ) != archive
