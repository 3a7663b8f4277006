"""A class-data-sharing archive for the Spark driver's JVM: a (re)started driver maps Spark's classes instead
of loading them one by one.

Every start of a driver (a first run, and each restart after a crash) loads, parses and verifies
thousands of classes from PySpark's jars before its first batch; on a 2-core machine that is seconds
of every restart. JDK 13 and later can write the classes that one run loaded into a dynamic archive
(``-XX:ArchiveClassesAtExit``) and map them into later runs (``-XX:SharedArchiveFile``); the
measured effect is in docs/benchmarks.md ("Spark driver start-up").

1. :func:`build` (``onceflow job class-archive``; ``make setup`` runs it) starts a
   local session with the driver's defaults, runs what a job's first batch runs (a Python data
   source read as a stream, a watermarked window aggregation, a Python data source writer, a Python
   UDF and ``mapInArrow``), and stops. The JVM writes the archive at exit, under a temporary name
   that is renamed once the JVM exited cleanly.
2. :func:`with_class_archive` names the archive (``spark.driver.extraJavaOptions``) when one exists
   for this JVM and these jars, is owned by this user and writable by nobody else, and the job puts
   no jar before Spark's (``spark.driver.extraClassPath``, which the object store's connector does);
   otherwise the driver starts as before. Nothing else changes: the archive holds the same classes.

The archive's file name is a digest of the ``java`` binary (path, size, mtime) and of PySpark's jar
directory (names and sizes), so a new JDK or a new PySpark never meets an archive made for another
(the JVM would refuse it, with a warning, and start without it). The directory is
``$ONCEFLOW_CLASS_ARCHIVE_DIR``, or ``$XDG_CACHE_HOME/onceflow/jvm`` (``~/.cache/onceflow/jvm``),
created private (0700).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from onceflow.core.logging import get_logger

_log = get_logger(__name__)

#: Overrides the archive directory (tests and CI point it into the checkout's cache).
DIR_ENV = "ONCEFLOW_CLASS_ARCHIVE_DIR"
#: The warm-up child's archive path (set by :func:`build`).
_DUMP_ENV = "ONCEFLOW_CLASS_ARCHIVE_DUMP"
#: The Spark option the archive goes in (appended to what the job's own configuration sets).
JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
#: Jars put before Spark's on the driver's class path: then the archive does not apply.
CLASS_PATH_KEY = "spark.driver.extraClassPath"


def archive_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where archives live: ``$ONCEFLOW_CLASS_ARCHIVE_DIR``, else the user's cache directory."""
    if environ.get(DIR_ENV):
        return Path(environ[DIR_ENV])
    cache = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "onceflow" / "jvm"


def _java(environ: Mapping[str, str]) -> Path | None:
    """The ``java`` PySpark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    if environ.get("JAVA_HOME"):
        candidate = Path(environ["JAVA_HOME"]) / "bin" / "java"
        return candidate.resolve() if candidate.exists() else None
    found = shutil.which("java", path=environ.get("PATH"))
    return Path(found).resolve() if found else None


def _spark_jars(environ: Mapping[str, str]) -> Path | None:
    """The jar directory of the Spark the driver runs: ``$SPARK_HOME/jars``, else PySpark's own."""
    if environ.get("SPARK_HOME"):
        return Path(environ["SPARK_HOME"]) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def archive_path(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The archive for this JVM and these jars (it may not exist yet); None without a ``java`` or jars."""
    java, jars = _java(environ), _spark_jars(environ)
    if java is None or jars is None or not jars.is_dir():
        return None
    digest = hashlib.sha256()
    java_stat = java.stat()
    digest.update(f"{java}\0{java_stat.st_size}\0{java_stat.st_mtime_ns}\0".encode())
    for jar in sorted(jars.iterdir()):
        digest.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    return archive_dir(environ) / f"spark-driver-{digest.hexdigest()[:16]}.jsa"


def _trusted(path: Path) -> bool:
    """A regular file owned by this user that nobody else can write (the JVM maps it as code)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def with_class_archive(conf: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Step 2: the driver's Spark ``conf`` with the archive added to its JVM options when a usable one exists.

    Unchanged when the job names an archive of its own, or puts jars before Spark's on the driver's
    class path (``spark.driver.extraClassPath``): the JVM maps an archive only for the class path it
    was written with.
    """
    existing = conf.get(JAVA_OPTIONS_KEY, "")
    path = archive_path(environ)
    if path is None or not _trusted(path) or "SharedArchiveFile" in existing or conf.get(CLASS_PATH_KEY):
        return dict(conf)
    return {**conf, JAVA_OPTIONS_KEY: f"{existing} -XX:SharedArchiveFile={path}".strip()}


# -- Step 1: the warm-up that writes the archive --------------------------------------------------------


def _warm_up_source() -> Any:
    """A Python data source read as a stream (three micro-batches of events) and written by a Python writer."""
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        InputPartition,
        WriterCommitMessage,
    )
    from pyspark.sql.streaming.datasource import ReadLimit

    class Reader(DataSourceStreamReader):
        def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's API
            return {"n": 0}

        def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:  # noqa: N802 - Spark's API
            return {"n": min(start["n"] + 100, 300)}

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
            return [InputPartition((start["n"], end["n"]))]

        def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
            from datetime import UTC, datetime

            first, last = partition.value
            for n in range(first, last):
                yield (datetime.fromtimestamp(n, UTC), f"10.0.0.{n % 7}")

    class Writer(DataSourceStreamWriter):
        def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's API
            pass

        def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's API
            pass

    class WarmUp(DataSource):
        @classmethod
        def name(cls) -> str:
            return "onceflow-class-archive-warm-up"

        def schema(self) -> str:
            return "event_time timestamp, ip string"

        def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802 - Spark's API
            return Reader()

        def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 - Spark's API
            return Writer()

    return WarmUp


def _warm_up(checkpoint: Path) -> None:
    """What a driver's first batches run, in this process's session (the JVM writes the archive at exit)."""
    import pyarrow as pa
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as fn

    from onceflow.spark.runner.session import DEFAULTS, LOOPBACK_DEFAULTS

    builder = SparkSession.builder.master("local[2]").appName("onceflow-class-archive")
    for key, value in {**DEFAULTS, **LOOPBACK_DEFAULTS, "spark.sql.shuffle.partitions": "2"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    source = _warm_up_source()
    spark.dataSource.register(source)
    events = spark.readStream.format(source.name()).load()
    counts = (
        events.withWatermark("event_time", "5 seconds")
        .groupBy(fn.window("event_time", "5 seconds"), "ip")
        .count()
        .select(fn.col("window.start").alias("window_start"), "ip", "count")
    )
    query = (
        counts.writeStream.format(source.name())
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds")
        .start()
    )
    query.processAllAvailable()
    query.stop()

    def double(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_arrays([pa.compute.multiply(batch.column(0), 2)], names=["id"])

    spark.range(1000).mapInArrow(double, "id long").agg(fn.sum("id")).collect()
    spark.range(100).select(fn.udf(lambda n: n + 1, "long")("id")).collect()
    # The JVM writes the archive as it exits, which it does when its stdin closes: wait for that.
    gateway = SparkContext._gateway
    assert gateway is not None
    jvm = gateway.proc
    spark.stop()
    jvm.stdin.close()
    jvm.wait(timeout=300)


def build(environ: Mapping[str, str] = os.environ, *, timeout_s: float = 600.0) -> Path | None:
    """Step 1: write the archive for this JVM and these jars unless it exists; returns it (None: no ``java``).

    The warm-up runs in a child interpreter whose driver JVM has ``-XX:ArchiveClassesAtExit``; raises
    RuntimeError naming its log when it fails or leaves no archive.
    """
    path = archive_path(environ)
    if path is None:
        return None
    if _trusted(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    for stale in path.parent.glob(f".{path.name}.*.partial"):  # a warm-up that was killed
        stale.unlink(missing_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="onceflow-class-archive-") as work:
        log_path = Path(work) / "warm-up.log"
        env = {**environ, _DUMP_ENV: str(partial), "PYSPARK_PYTHON": sys.executable}
        child = f"import sys; from {__name__} import warm_up_child; warm_up_child(sys.argv[1])"
        started = time.monotonic()
        with log_path.open("wb") as log:
            code = subprocess.run(
                [sys.executable, "-c", child, str(Path(work) / "checkpoint")],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            ).returncode
        if code != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"class archive warm-up failed (exit {code}), no archive written:\n{tail}")
    partial.chmod(0o644)
    partial.replace(path)
    _log.info(
        "class_archive.built", path=str(path), bytes=path.stat().st_size, seconds=round(time.monotonic() - started, 1)
    )
    return path


def warm_up_child(checkpoint: str) -> None:
    """The warm-up's child interpreter (``build``): its driver JVM writes the archive named by the parent."""
    dump = os.environ[_DUMP_ENV]
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options -XX:ArchiveClassesAtExit={dump} pyspark-shell"
    _warm_up(Path(checkpoint))


def build_command() -> int:
    """``onceflow job class-archive``: write the archive unless it exists; 1 without a ``java``."""
    path = build()
    if path is None:
        print("class archive: no java found (JAVA_HOME or PATH); drivers start without one", file=sys.stderr)
        return 1
    print(f"class archive: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0
