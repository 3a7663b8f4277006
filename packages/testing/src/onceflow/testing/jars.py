"""JVM tools that ``make setup`` fetched from Maven Central: where their jars are, or a clear error.

Each tool has a ``tools/<tool>/pom.xml`` pinning its version as a property; ``make setup`` resolves it
into ``.cache/<tool>/<version>/libs`` and marks the folder complete with ``.complete``. The Kafka,
S3Proxy and hadoop-aws fixtures find their jars here, one way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

STAMP: Final = ".complete"


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
