"""The Spark driver's class archive: which archive a JVM gets, when it is trusted, and that a driver really maps it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from onceflow.core.process.class_archive import DIR_ENV, ClassArchive
from onceflow.spark.runner import class_archive
from onceflow.spark.runner.class_archive import JAVA_OPTIONS_KEY, spark_archive, with_class_archive


@pytest.fixture
def installs(tmp_path: Path) -> dict[str, str]:
    """An environment naming a JDK and a Spark of the test's own (only their files' names and sizes matter)."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"java 17")
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"core")
    return {
        "JAVA_HOME": str(tmp_path / "jdk"),
        "SPARK_HOME": str(tmp_path / "spark"),
        DIR_ENV: str(tmp_path / "archives"),
    }


def test_the_archive_is_named_for_its_jvm_and_its_jars(installs: dict[str, str], tmp_path: Path) -> None:
    def path() -> Path | None:
        archive = spark_archive(installs)
        return archive.path if archive is not None else None

    first = path()
    assert first is not None and first.parent == tmp_path / "archives"
    assert path() == first
    (tmp_path / "spark" / "jars" / "spark-sql.jar").write_bytes(b"sql")  # a new jar: another archive
    second = path()
    assert second is not None and second != first
    (tmp_path / "jdk" / "bin" / "java").write_bytes(b"java 17.0.16")  # another JDK build: another again
    assert path() not in (first, second)
    assert spark_archive({**installs, "JAVA_HOME": str(tmp_path / "no-jdk")}) is None


def test_the_archive_is_named_in_the_driver_options_only_when_it_is_there_trusted_and_fits(
    installs: dict[str, str],
) -> None:
    def options(conf: dict[str, str]) -> str:
        return with_class_archive(conf, installs).get(JAVA_OPTIONS_KEY, "")

    archive = spark_archive(installs)
    assert archive is not None
    path = archive.path
    gc = {JAVA_OPTIONS_KEY: "-XX:+UseSerialGC"}
    assert options(gc) == "-XX:+UseSerialGC"  # no archive yet
    path.parent.mkdir()
    path.write_bytes(b"archive")
    path.chmod(0o644)
    assert options(gc) == f"-XX:+UseSerialGC -XX:SharedArchiveFile={path}"
    assert options({"spark.master": "local[2]"}) == f"-XX:SharedArchiveFile={path}"
    # the job's own archive wins
    assert options({JAVA_OPTIONS_KEY: "-XX:SharedArchiveFile=/mine.jsa"}) == "-XX:SharedArchiveFile=/mine.jsa"
    # jars before Spark's: another class path than the archive's
    assert options({**gc, "spark.driver.extraClassPath": "/opt/hadoop-aws.jar"}) == "-XX:+UseSerialGC"
    # a file that another user could have written is code nobody vouches for
    path.chmod(0o666)
    assert options(gc) == "-XX:+UseSerialGC"
    path.unlink()
    path.symlink_to(path.parent / "elsewhere.jsa")
    assert options(gc) == "-XX:+UseSerialGC"


def test_a_jdk_or_jars_that_cannot_be_read_leave_the_driver_as_it_was(
    installs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*args: object, **kwargs: object) -> ClassArchive:
        raise PermissionError(13, "Permission denied", installs["SPARK_HOME"])

    monkeypatch.setattr(ClassArchive, "of", unreadable)
    conf = {JAVA_OPTIONS_KEY: "-XX:+UseSerialGC"}
    assert with_class_archive(conf, installs) == conf


def test_the_command_says_why_it_cannot_write_the_archive(
    installs: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "archives").write_text("a file where the directory should be")
    for name, value in installs.items():
        monkeypatch.setenv(name, value)
    assert class_archive.build_command() == 1
    err = capsys.readouterr().err
    assert "class archive: cannot write it" in err and DIR_ENV in err, err


@pytest.mark.slow
def test_a_driver_maps_spark_classes_from_the_archive(tmp_path: Path) -> None:
    """Steps:
    1. The archive for this JVM and this PySpark is built (``make setup`` did it already: then a no-op).
    2. A driver session is built the way every job's is (``build_session``), with class loading logged.
    3. Spark's classes came from the archive's top layer, not from the jars.
    """
    # Step 1
    archive = class_archive.build()
    assert archive is not None and archive.exists()
    # Step 2
    load_log = tmp_path / "class-load.log"
    script = textwrap.dedent(
        f"""
        from onceflow.ipcount.schema import ENTRYPOINT
        from onceflow.spark.job.settings import SparkJobSettings
        from onceflow.spark.runner.session import build_session
        settings = SparkJobSettings.model_validate({{
            "entrypoint": ENTRYPOINT,
            "guarantee": "at-least-once",
            "spark": {{"master": "local[1]", "conf": {{
                "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -Xlog:class+load=info:file={load_log}"}}}},
        }})
        spark = build_session(settings)
        assert spark.range(10).count() == 10
        spark.stop()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], env=os.environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unable to use shared archive" not in done.stdout + done.stderr
    # Step 3: classes read from a jar (``source: file:...jar``) are few; lambdas and generated code
    # are made at run time either way
    spark_classes = [line for line in load_log.read_text().splitlines() if " org.apache.spark." in line]
    shared = [line for line in spark_classes if "source: shared objects file (top)" in line]
    from_jars = [line for line in spark_classes if ".jar" in line.partition(" source: ")[2]]
    assert len(shared) > 3000, f"{len(shared)} of {len(spark_classes)} Spark classes from the archive"
    assert len(from_jars) < 0.05 * len(shared), f"{len(from_jars)} read from jars, {len(shared)} from the archive"
