"""The Spark driver's class archive: a (re)started driver maps Spark's classes instead of loading them.

Every start of a driver (a first run, and each restart after a crash) loads thousands of classes from
PySpark's jars before its first batch; on a 2-core machine that is seconds of every restart. This is
a :class:`~onceflow.core.process.class_archive.ClassArchive` of Spark's jars (named ``spark-driver``);
the measured effect is in docs/benchmarks.md ("Spark driver start-up").

1. :func:`build` (``onceflow job class-archive``; ``make setup`` runs it) starts a local session with
   the driver's defaults in a child interpreter, runs what a job's first batches run (a Python data
   source read as a stream, a watermarked window aggregation, a Python data source writer, a Python
   UDF and ``mapInArrow``), and stops; the JVM writes the archive as it exits.
2. :func:`with_class_archive` names the archive (``spark.driver.extraJavaOptions``) when it is usable
   and the job puts no jar before Spark's (``spark.driver.extraClassPath``, which the object store's
   connector does); otherwise the driver starts as before. Nothing else changes: the archive holds
   the same classes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from onceflow.core.logging import get_logger
from onceflow.core.process.class_archive import DIR_ENV, ClassArchive, find_java

_log = get_logger(__name__)

#: The warm-up child's JVM option that writes the archive (set by :func:`build`).
_DUMP_ENV = "ONCEFLOW_CLASS_ARCHIVE_DUMP"
#: The Spark option the archive goes in (appended to what the job's own configuration sets).
JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
#: Jars put before Spark's on the driver's class path: then the archive does not apply.
CLASS_PATH_KEY = "spark.driver.extraClassPath"


def spark_archive(environ: Mapping[str, str] = os.environ) -> ClassArchive | None:
    """The archive for this ``java`` and the driver's Spark (``$SPARK_HOME/jars``, else PySpark's); None
    without a ``java``."""
    java = find_java(environ)
    if environ.get("SPARK_HOME"):
        jars = Path(environ["SPARK_HOME"]) / "jars"
    else:
        import pyspark

        jars = Path(pyspark.__file__).parent / "jars"
    if java is None or not jars.is_dir():
        return None
    return ClassArchive.of("spark-driver", java, jars, environ)


def with_class_archive(conf: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Step 2: the driver's Spark ``conf`` with the archive added to its JVM options when a usable one exists.

    Unchanged when the job names an archive of its own, or puts jars before Spark's on the driver's
    class path (``spark.driver.extraClassPath``): the JVM maps an archive only for the class path it
    was written with.
    """
    existing = conf.get(JAVA_OPTIONS_KEY, "")
    try:
        archive = spark_archive(environ)
    except OSError as exc:  # an unreadable JDK or jar directory: the driver starts as it would without
        _log.warning("class_archive.unavailable", error=f"{type(exc).__name__}: {exc}")
        return dict(conf)
    if archive is None or not archive.usable() or "SharedArchiveFile" in existing or conf.get(CLASS_PATH_KEY):
        return dict(conf)
    return {**conf, JAVA_OPTIONS_KEY: f"{existing} {archive.option()}".strip()}


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
    """Step 1: write the archive for this ``java`` and this Spark unless it exists; returns it (None: no
    ``java``). Raises RuntimeError with the end of the warm-up's log when it fails or leaves no archive."""
    archive = spark_archive(environ)
    if archive is None:
        return None
    started = time.monotonic()

    def warm_up(dump_option: str) -> None:
        with tempfile.TemporaryDirectory(prefix="onceflow-class-archive-") as work:
            log_path = Path(work) / "warm-up.log"
            env = {**environ, _DUMP_ENV: dump_option, "PYSPARK_PYTHON": sys.executable}
            child = f"import sys; from {__name__} import warm_up_child; warm_up_child(sys.argv[1])"
            with log_path.open("wb") as log:
                code = subprocess.run(
                    [sys.executable, "-c", child, str(Path(work) / "checkpoint")],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=timeout_s,
                    check=False,
                ).returncode
            if code != 0:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"class archive warm-up failed (exit {code}), no archive written:\n{tail}")

    if archive.usable():
        return archive.path
    path = archive.write(warm_up)
    _log.info(
        "class_archive.built", path=str(path), bytes=path.stat().st_size, seconds=round(time.monotonic() - started, 1)
    )
    return path


def warm_up_child(checkpoint: str) -> None:
    """The warm-up's child interpreter (``build``): its driver JVM writes the archive named by the parent."""
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options {os.environ[_DUMP_ENV]} pyspark-shell"
    _warm_up(Path(checkpoint))


def build_command() -> int:
    """``onceflow job class-archive``: write the archive unless it exists; 1 (saying why) without a
    ``java``, when the archive directory cannot be written, or when the warm-up fails."""
    try:
        path = build()
    except OSError as exc:
        print(
            f"class archive: cannot write it ({exc}); set {DIR_ENV} to a directory of yours. "
            "Drivers start without one, only slower",
            file=sys.stderr,
        )
        return 1
    except RuntimeError as exc:
        print(f"class archive: {exc}", file=sys.stderr)
        return 1
    if path is None:
        print("class archive: no java found (JAVA_HOME or PATH); drivers start without one", file=sys.stderr)
        return 1
    print(f"class archive: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0
