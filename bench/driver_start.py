"""A Spark driver's start, with and without the class archive (onceflow.spark.runner.class_archive).

Each run is a fresh interpreter that builds the driver's session the way every job does
(``build_session``: local[2], the job's defaults) and runs a first JVM query and a first Python query
(a UDF: the Python workers start), as a job's first batch does. The runs alternate between the
archive and none, so the machine's load falls on both alike; the table gives each run's times and
the medians, and the ratio with / without.

    .venv/bin/python bench/driver_start.py --rounds 5

The archive is built first when it is missing (``onceflow job class-archive``; not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = """
import json, time
started = time.monotonic()
from onceflow.ipcount.schema import ENTRYPOINT
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.session import build_session
from pyspark.sql import functions as fn
settings = SparkJobSettings.model_validate(
    {"entrypoint": ENTRYPOINT, "guarantee": "at-least-once", "spark": {"master": "local[2]"}}
)
spark = build_session(settings)
session = time.monotonic()
spark.range(1000).groupBy((fn.col("id") % 7).alias("k")).count().collect()
jvm_query = time.monotonic()
spark.range(100).select(fn.udf(lambda n: n + 1, "long")("id")).collect()
python_query = time.monotonic()
print(json.dumps({"session": session - started, "jvm_query": jvm_query - session,
                  "python_query": python_query - jvm_query, "total": python_query - started}))
spark.stop()
"""

PHASES = ("session", "jvm_query", "python_query", "total")


def run(archive_dir: str) -> dict[str, float]:
    env = {**os.environ, "ONCEFLOW_CLASS_ARCHIVE_DIR": archive_dir}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=600, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from onceflow.core.process.class_archive import archive_dir
    from onceflow.spark.runner.class_archive import build

    if build() is None:
        print("no java: nothing to compare", file=sys.stderr)
        return 1
    runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory(prefix="onceflow-no-archive-") as empty:
        for round_ in range(1, args.rounds + 1):
            for variant, directory in (("without", empty), ("with", str(archive_dir()))):
                result = run(directory)
                runs[variant].append(result)
                times = " ".join(f"{phase}={result[phase]:.2f}s" for phase in PHASES)
                print(f"round {round_} {variant:7} {times} (load {os.getloadavg()[0]:.1f})", flush=True)
    print("\n| phase | median without | median with | with / without |\n|---|---|---|---|")
    for phase in PHASES:
        without = statistics.median(r[phase] for r in runs["without"])
        with_ = statistics.median(r[phase] for r in runs["with"])
        print(f"| {phase} | {without:.2f} s | {with_:.2f} s | {with_ / without:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
