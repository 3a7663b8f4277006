"""Hadoop's S3A connector as ``make setup`` (``make hadoop-aws``) resolved it: the classpath a Spark driver
needs for a checkpoint on S3 (``ONCEFLOW_HADOOP_AWS_CLASSPATH``, see ``onceflow.spark.runner.object_store``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from onceflow.testing.jars import pom_property, repo_root
from onceflow.testing.s3.process import S3ProxyJarsMissing

POM: Final = Path("tools/hadoop-aws/pom.xml")


def hadoop_aws_classpath() -> str:
    """The ``:``-separated jars of hadoop-aws and the AWS SDK's S3 modules; :class:`S3ProxyJarsMissing` saying
    to run ``make setup`` when they were not resolved (or were removed from the Maven repository)."""
    root = repo_root(POM, S3ProxyJarsMissing)
    version = pom_property(root / POM, "hadoop.version", S3ProxyJarsMissing)
    listing = root / ".cache" / "hadoop-aws" / version / "classpath.txt"
    jars = listing.read_text().strip().split(os.pathsep) if listing.is_file() else []
    missing = [jar for jar in jars if not Path(jar).is_file()]
    if not jars or missing:
        what = f"{missing[0]} is gone" if missing else f"{listing} is missing"
        raise S3ProxyJarsMissing(
            f"hadoop-aws {version} is not resolved ({what}): run 'make setup' (or 'make hadoop-aws')"
        )
    return os.pathsep.join(jars)
