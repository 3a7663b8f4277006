"""JVM tools that ``make setup`` fetched from Maven Central: where their jars are, or a clear error.

Each tool has a ``tools/<tool>/pom.xml`` pinning its version as a property; ``make setup`` resolves it
into ``.cache/<tool>/<version>/libs`` and marks the folder complete with ``.complete``. The Kafka,
S3Proxy and hadoop-aws fixtures find their jars here, one way, and fail alike when they are missing.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

import pytest

from onceflow.core.process.class_archive import ClassArchive

T = TypeVar("T")

STAMP: Final = ".complete"
#: JVM options of the JVMs the tests start (Kafka, S3Proxy, Spark): they start in about half the time
#: and use less CPU on a small machine, at the cost of peak throughput (C1 compiler only). The benches
#: measure with a JVM's own defaults instead (``ApacheKafka(..., jvm_options=())`` runs Kafka so).
FAST_START_JVM_OPTIONS: Final = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class JarsMissing(RuntimeError):  # noqa: N818 - the name says what it is
    """A tool's jars are not where ``make setup`` puts them."""


def repo_root(pom: Path, missing: type[JarsMissing] = JarsMissing) -> Path:
    """The onceflow checkout holding ``pom`` (a path relative to it), found from the working directory
    upwards, else from this file; ``missing`` when there is none."""
    for start in (Path.cwd(), Path(__file__).resolve()):
        for folder in (start, *start.parents):
            if (folder / pom).is_file():
                return folder
    raise missing(f"no {pom} above {Path.cwd()}: run from inside the onceflow repository")


def pom_property(pom: Path, name: str, missing: type[JarsMissing] = JarsMissing) -> str:
    """The value of ``<name>`` in the ``<properties>`` of ``pom``; ``missing`` when it has none."""
    match = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", pom.read_text())
    if match is None:
        raise missing(f"{pom} has no <{name}>")
    return match.group(1)


def fetched_libs(tool: str, *, title: str, version_property: str, missing: type[JarsMissing] = JarsMissing) -> Path:
    """``.cache/<tool>/<version>/libs`` of the checkout (``title`` names the tool in the error, the
    version is ``version_property`` of ``tools/<tool>/pom.xml``); ``missing`` saying to run
    ``make setup`` when the folder is not complete."""
    pom = Path("tools") / tool / "pom.xml"
    root = repo_root(pom, missing)
    version = pom_property(root / pom, version_property, missing)
    cache = root / ".cache" / tool / version
    if not (cache / STAMP).is_file():
        raise missing(
            f"{title} {version} jars are missing ({cache / 'libs'}): run 'make setup' "
            f"(or 'make {tool}'), which fetches them from Maven Central"
        )
    return cache / "libs"


def _java(title: str, missing: type[JarsMissing]) -> str:
    java = shutil.which("java")
    if java is None:
        raise missing(f"no java on PATH: {title} needs Java 17+ (see 'make setup')")
    return java


def tool_archive(name: str, libs: Path, *, title: str, missing: type[JarsMissing] = JarsMissing) -> ClassArchive:
    """The class archive ``name`` of ``libs`` for the java :func:`java_command` runs (it may not exist yet);
    ``missing`` when there is no java on PATH."""
    return ClassArchive.of(name, Path(_java(title, missing)).resolve(), libs)


def java_command(
    main: str,
    *args: str,
    libs: Path,
    heap: str,
    options: Sequence[str] = (),
    title: str,
    missing: type[JarsMissing] = JarsMissing,
    archive: str | None = None,
) -> list[str]:
    """``java -Xmx<heap> <options> -cp <libs>/* <main> <args>``; ``missing`` when there is no java on PATH
    (``title`` names what needs it). With ``archive``, the JVM maps that class archive of ``libs``
    (:func:`tool_archive`) when ``make setup`` wrote it."""
    java = _java(title, missing)
    shared = tool_archive(archive, libs, title=title, missing=missing) if archive is not None else None
    mapped = [shared.option()] if shared is not None and shared.usable() else []
    return [java, f"-Xmx{heap}", *options, *mapped, "-cp", f"{libs}/*", main, *args]


def start_or_fail(start: Callable[[], T]) -> T:
    """``start()`` of a fixture's JVM tool; a :class:`JarsMissing` fails the test with its message alone
    (it says what to run), never a skip."""
    try:
        return start()
    except JarsMissing as exc:
        missing = str(exc)
    pytest.fail(missing, pytrace=False)  # outside the except: the message alone, no chained traceback
