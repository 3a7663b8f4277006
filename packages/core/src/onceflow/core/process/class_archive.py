"""A JVM's class-data-sharing archive: a JVM that starts again maps the classes it loaded last time.

A JVM that runs a big jar directory (Spark's, Kafka's) loads, parses and verifies thousands of classes
before it does any work, at every start. JDK 13 and later can write the classes one run loaded into a
dynamic archive (``-XX:ArchiveClassesAtExit``) and map them into later runs (``-XX:SharedArchiveFile``).

1. :meth:`ClassArchive.write` runs the caller's warm-up with the dump option (the JVM writes the
   archive as it exits cleanly, under a temporary name) and renames the archive into place once whole.
2. :meth:`ClassArchive.usable` says whether a launcher may name it (:meth:`ClassArchive.option`):
   the file exists, it and its directory are this user's own, and nobody else can write either
   (the JVM maps it as code).

The file name is a digest of the ``java`` binary (path, size, mtime) and of the jar directory (its
path: the JVM checks the class path; its jars' names and sizes), so a new JDK, another checkout or
new jars never meet an archive made for others (the JVM would refuse one
with a warning and start without it). Archives live in ``$ONCEFLOW_CLASS_ARCHIVE_DIR``, or
``$XDG_CACHE_HOME/onceflow/jvm`` (``~/.cache/onceflow/jvm``), a directory created private (0700).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from onceflow.core.process.session import is_alive

#: Overrides the archive directory.
DIR_ENV = "ONCEFLOW_CLASS_ARCHIVE_DIR"


def archive_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where archives live: ``$ONCEFLOW_CLASS_ARCHIVE_DIR``, else the user's cache directory."""
    if environ.get(DIR_ENV):
        return Path(environ[DIR_ENV])
    cache = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "onceflow" / "jvm"


def find_java(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The ``java`` a launcher runs: ``$JAVA_HOME/bin/java``, else the one on ``PATH`` (resolved)."""
    if environ.get("JAVA_HOME"):
        candidate = Path(environ["JAVA_HOME"]) / "bin" / "java"
        return candidate.resolve() if candidate.exists() else None
    found = shutil.which("java", path=environ.get("PATH"))
    return Path(found).resolve() if found else None


def _private(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


@dataclass(frozen=True, slots=True)
class ClassArchive:
    """The archive of ``name`` (what runs: ``spark-driver``, ``kafka``) for one ``java`` and one jar directory."""

    path: Path

    @classmethod
    def of(cls, name: str, java: Path, jars: Path, environ: Mapping[str, str] = os.environ) -> ClassArchive:
        digest = hashlib.sha256()
        java_stat = java.stat()
        digest.update(f"{java}\0{java_stat.st_size}\0{java_stat.st_mtime_ns}\0{jars.resolve()}\0".encode())
        for jar in sorted(jars.iterdir()):
            digest.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
        return cls(archive_dir(environ) / f"{name}-{digest.hexdigest()[:16]}.jsa")

    def usable(self) -> bool:
        """Step 2: a regular file owned by this user, in a directory of this user's, neither of which
        anyone else can write (no one else can put or swap code in it)."""
        try:
            info, folder = self.path.lstat(), self.path.parent.lstat()
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and stat.S_ISDIR(folder.st_mode) and _private(info) and _private(folder)

    def option(self) -> str:
        """The JVM option that maps the archive."""
        return f"-XX:SharedArchiveFile={self.path}"

    def write(self, warm_up: Callable[[str], object]) -> Path:
        """Step 1: ``warm_up(dump_option)`` runs a JVM with the option to completion; then the archive is
        installed. A no-op when a usable archive exists. Raises RuntimeError when the JVM wrote none."""
        if self.usable():
            return self.path
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path.parent.chmod(0o700)
        for stale in self.path.parent.glob(f".{self.path.name}.*.partial"):  # a warm-up that was killed
            if not is_alive(int(stale.suffixes[-2].lstrip("."))):
                stale.unlink(missing_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        try:
            warm_up(f"-XX:ArchiveClassesAtExit={partial}")
            if not partial.exists():
                raise RuntimeError(f"the warm-up's JVM wrote no class archive ({partial})")
            partial.chmod(0o644)
            partial.replace(self.path)
        finally:
            partial.unlink(missing_ok=True)
        return self.path
