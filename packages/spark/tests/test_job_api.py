"""The public job API without a running pipeline: entry points, outputs and their schemas, bindings.

Every error a user can make when writing a job fails at start and names what is wrong.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from onceflow.contract import DEAD_LETTERS_OUTPUT, SinkMode, ValueFormat
from onceflow.core.errors import InvalidConfig
from onceflow.spark.api import JobContext, load_entrypoint, outputs_of
from onceflow.spark.api.outputs import participants_with_bindings
from onceflow.spark.exceptions import JobDefinitionError
from onceflow.spark.job.dead_letters import DEAD_LETTER_SCHEMA
from onceflow.spark.runner.attempt import build_outputs

from .conftest import job_settings

PARTICIPANTS = [{"sink": "sqlite", "target": "127.0.0.1:1"}, {"sink": "kafka", "target": "127.0.0.1:1"}]


def _settings(tmp_path: Path, **overrides: object):  # type: ignore[no-untyped-def]
    return job_settings(
        "127.0.0.1:9",
        tmp_path,
        guarantee="exactly-once",
        participants=PARTICIPANTS,
        **overrides,
    )


def test_entry_points_load_from_a_module_or_a_file(tmp_path: Path) -> None:
    assert load_entrypoint("onceflow.ipcount.job:job").__name__ == "job"
    path = tmp_path / "my_job.py"
    path.write_text("def build(context):\n    return context.source()\n")
    assert load_entrypoint(f"{path}:build").__name__ == "build"
    for spec, message in [
        ("no_colon", "must be module:function"),
        ("onceflow.nope:job", "cannot import 'onceflow.nope'"),
        ("onceflow.ipcount.job:nope", "has no function 'nope'"),
        (f"{tmp_path}/missing.py:job", "no file"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_entrypoint(spec)


def test_the_examples_declare_typed_outputs(spark: SparkSession, tmp_path: Path) -> None:
    bound = {"results": [{"sink": "sqlite", "table": "t", "mode": "append"}]}
    ip_count = build_outputs(spark, _settings(tmp_path, outputs={**bound, DEAD_LETTERS_OUTPUT: bound["results"]}))
    results = ip_count.schemas["results"]
    assert [(f.name, f.type) for f in results] == [
        ("window_start", pa.int64()),
        ("window_end", pa.int64()),
        ("ip", pa.string()),
        ("count", pa.int64()),
    ]
    assert ip_count.schemas[DEAD_LETTERS_OUTPUT] == DEAD_LETTER_SCHEMA
    assert ip_count.side_outputs == [DEAD_LETTERS_OUTPUT]

    traffic = build_outputs(spark, _settings(tmp_path, entrypoint="onceflow.spark.examples.traffic:job"))
    assert traffic.schemas["results"].names == [
        "window_start",
        "window_end",
        "path",
        "status_class",
        "requests",
        "bytes",
    ]
    assert traffic.schemas["results"].field("window_start").type == pa.timestamp("us", tz="UTC")
    assert traffic.side_outputs == []  # dead letters are not bound: published at least once instead

    errors = build_outputs(spark, _settings(tmp_path, entrypoint="onceflow.spark.examples.server_errors:job"))
    assert errors.schemas["results"].field("from_bot").type == pa.bool_()
    assert list(errors.derived) == ["bot_errors"]
    assert errors.schemas["bot_errors"].names == ["event_time", "ip", "path", "status"]
    assert errors.side_outputs == []


def test_an_unsupported_column_type_fails_at_start_naming_the_column(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "tags.py"
    path.write_text(
        "from pyspark.sql import functions as F\n"
        "def job(context):\n"
        "    events = context.access_events(['event_time_ms', 'ip'])\n"
        "    return events.select('ip', F.array(F.col('ip')).alias('tags'))\n"
    )
    with pytest.raises(JobDefinitionError, match=r"column 'tags' has type list<element: string( not null)?>"):
        build_outputs(spark, _settings(tmp_path, entrypoint=f"{path}:job"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return {'a': context.source(), 'b': context.source()}", r"several streaming outputs \(a, b\)"),
        ("return {'a': context.source(), 'b': 42}", "'outputs.b': must be a function of the micro-batch of 'a'"),
        ("return {'a': context.source(), 'b': lambda batch: 42}", "'outputs.b': must return a batch DataFrame"),
        ("return {'a': context.source(), 'b': lambda batch: batch.select('nope')}", "'outputs.b': failed on an empty"),
        ("return 42", "must return a streaming DataFrame or"),
        ("return {'bad name': context.source()}", "output name 'bad name' must match"),
        ("return context.spark.range(3)", "must be a streaming DataFrame"),
    ],
)
def test_what_a_job_returns_is_checked(spark: SparkSession, tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(f"def job(context):\n    {body}\n")
    with pytest.raises(JobDefinitionError, match=message):
        build_outputs(spark, _settings(tmp_path, entrypoint=f"{path}:job"))


def test_bindings_come_from_the_outputs_tables(spark: SparkSession, tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        outputs={
            "results": [
                {"sink": "sqlite", "table": "counts", "mode": "upsert", "keys": ["window_start", "ip"]},
                {"sink": "kafka", "topic": "counts", "keys": ["ip"], "value_format": "json"},
            ],
            "dead_letters": [{"sink": "sqlite", "table": "rejects", "mode": "append"}],
        },
    )
    context = JobContext(spark, settings)
    from onceflow.ipcount.job import job

    outputs = outputs_of(job(context), context.side_outputs)
    participants = {p.sink: p for p in participants_with_bindings(settings, outputs)}
    sqlite = participants["sqlite"].bindings
    assert [(b.output, b.table, b.mode) for b in sqlite] == [
        ("results", "counts", SinkMode.UPSERT),
        ("dead_letters", "rejects", SinkMode.APPEND),
    ]
    assert sqlite[1].schema == DEAD_LETTER_SCHEMA
    (kafka,) = participants["kafka"].bindings
    assert (kafka.topic, kafka.keys, kafka.value_format) == ("counts", ("ip",), ValueFormat.JSON)

    unbound = _settings(tmp_path, outputs={"results": [{"sink": "sqlite", "table": "t", "mode": "append"}]})
    assert participants_with_bindings(unbound, outputs_of(job(JobContext(spark, unbound)), {}))
    with pytest.raises(InvalidConfig, match="dead_letters of the job have no"):
        participants_with_bindings(unbound, outputs)
    bad_key = _settings(tmp_path, outputs={"results": [{"sink": "sqlite", "table": "t", "keys": ["nope"]}]})
    with pytest.raises(InvalidConfig, match=r"key column\(s\) nope are not in output 'results'"):
        participants_with_bindings(bad_key, outputs_of(job(JobContext(spark, bad_key)), {}))


def test_outputs_must_name_known_participants(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sink 'postgres' is not one of the"):
        _settings(tmp_path, outputs={"results": [{"sink": "postgres", "table": "t"}]})


def test_a_job_file_is_shipped_from_a_folder_made_on_first_use(spark: SparkSession, tmp_path: Path) -> None:
    """Importing the shipping module makes no folder (every Python worker imports it, and a worker's
    exit would leave it behind); shipping a job file makes one, and ships the same copy once."""
    import os
    import subprocess
    import sys

    from onceflow.spark.api.shipping import ship_job_file

    temp = tmp_path / "temp"
    temp.mkdir()
    importer = [sys.executable, "-c", "import os, onceflow.spark.api.shipping; os._exit(0)"]  # as a worker exits
    subprocess.run(importer, check=True, env={**os.environ, "TMPDIR": str(temp)})
    assert list(temp.iterdir()) == []
    job = tmp_path / "my_job.py"
    job.write_text("def job(ctx):\n    raise AssertionError('not run')\n")
    copy = ship_job_file(spark, f"{job}:job")
    assert copy is not None and copy.read_text() == job.read_text()
    assert copy.parent.name.startswith("onceflow-job-files-")
    assert ship_job_file(spark, f"{job}:job") == copy
