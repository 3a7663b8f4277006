"""The replay audit's parts without Spark: the checkpoint's offset log, the planned ranges, value
canonicalisation and row comparison, reading a SQLite binding back, and the command's bad input."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest

from onceflow.cli.app import main as onceflow
from onceflow.contract import SinkBinding, SinkMode
from onceflow.core.errors import InvalidConfig
from onceflow.sinks.readback import SqliteReader
from onceflow.sinks.tables.dialects import SQLITE
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay import CheckpointLog, CheckpointUnreadable
from onceflow.spark.replay.compare import canonical_rows, compare_all, compare_keyed
from onceflow.spark.source.batch import batches_option, parse_batches_option, plan_ranges

TOPIC = "ip_count_source"


def _settings(checkpoint: Path) -> SparkJobSettings:
    return SparkJobSettings.model_validate(
        {
            "entrypoint": "my_jobs.counts:job",
            "checkpoint_location": str(checkpoint),
            "source": {"topic": TOPIC},
            "guarantee": "at-least-once",
        }
    )


def _write_batch(checkpoint: Path, batch: int, end: dict[int, int], watermark: int) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    metadata = {"batchWatermarkMs": watermark, "batchTimestampMs": 1, "conf": {}}
    offsets = {TOPIC: {str(p): o for p, o in end.items()}}
    (checkpoint / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(metadata)}\n{json.dumps(offsets)}")


def _initial(checkpoint: Path, start: dict[int, int]) -> None:
    (checkpoint / "onceflow").mkdir(parents=True, exist_ok=True)
    doc = {"topic": TOPIC, "offsets": {str(p): o for p, o in start.items()}}
    (checkpoint / "onceflow" / "initial-offsets.json").write_text(json.dumps(doc))


def test_the_checkpoint_gives_every_batch_its_range_and_watermark(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    _initial(checkpoint, {0: 5, 1: 0})
    _write_batch(checkpoint, 0, {0: 10, 1: 4}, 0)
    _write_batch(checkpoint, 1, {0: 10, 1: 9, 2: 3}, 7000)  # partition 2 joined
    _write_batch(checkpoint, 2, {0: 12, 1: 9, 2: 3}, 9000)  # planned, not committed
    plan = CheckpointLog(_settings(checkpoint)).plan(1)
    assert (plan.start, plan.first_batch, plan.last_batch, plan.merged_batches) == ({0: 5, 1: 0}, 0, 1, 0)
    assert [b.watermark_ms for b in plan.boundaries] == [0, 7000]
    ranges = plan_ranges(TOPIC, plan.start, plan.boundaries)
    assert [(r.partition, r.start, r.end, r.watermark_ms) for r in ranges] == [
        (0, 5, 10, 0),
        (1, 0, 4, 0),
        (1, 4, 9, 7000),
    ]  # partition 2 joins with an empty range at 3, as the stream reads it
    assert ranges[2].batch_end == {0: 10, 1: 9, 2: 3}
    assert parse_batches_option(batches_option(plan.boundaries)) == plan.boundaries


def test_a_checkpoint_that_cannot_be_replayed_is_named(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    with pytest.raises(CheckpointUnreadable, match=r"initial-offsets\.json is missing"):
        CheckpointLog(_settings(checkpoint)).plan(0)
    _initial(checkpoint, {0: 0})
    _write_batch(checkpoint, 0, {0: 3}, 0)
    _write_batch(checkpoint, 2, {0: 9}, 0)
    with pytest.raises(CheckpointUnreadable, match=r"batch\(es\) \[1\] are missing"):
        CheckpointLog(_settings(checkpoint)).plan(2)
    with pytest.raises(CheckpointUnreadable, match="offsets/3 is missing"):
        CheckpointLog(_settings(checkpoint)).plan(3)
    (checkpoint / "offsets" / "1").write_text("v1\nnot json\n")
    with pytest.raises(CheckpointUnreadable, match="offsets/1 is not a Spark offset log entry"):
        CheckpointLog(_settings(checkpoint)).plan(2)
    with pytest.raises(InvalidConfig, match="batches"):
        parse_batches_option('[{"end": 3}]')


def test_a_purged_log_is_read_as_one_range_from_the_initial_offsets(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    _initial(checkpoint, {0: 0})
    for batch, end in ((100, 50), (101, 60)):
        _write_batch(checkpoint, batch, {0: end}, 1000)
    plan = CheckpointLog(_settings(checkpoint)).plan(101)
    assert plan.merged_batches == 100
    assert [(r.start, r.end) for r in plan_ranges(TOPIC, plan.start, plan.boundaries)] == [(0, 50), (50, 60)]


SCHEMA = pa.schema(
    [
        pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("name", pa.string()),
        pa.field("amount", pa.decimal128(10, 3)),
        pa.field("ratio", pa.float64()),
        pa.field("ok", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("blob", pa.binary()),
    ]
)
ROW = {
    "at": dt.datetime(2026, 11, 25, 1, 2, 3, 456789, tzinfo=dt.UTC),
    "name": "a",
    "amount": decimal.Decimal("1.250"),
    "ratio": 0.1 + 0.2,
    "ok": True,
    "day": dt.date(2026, 11, 25),
    "blob": b"\x00\xff",
}


def test_values_compare_alike_whatever_the_storage() -> None:
    stored = {  # as a sink may give them back: ISO text, a shorter decimal, a float summed in another order
        "at": "2026-11-25T01:02:03.456789+00:00",
        "name": "a",
        "amount": decimal.Decimal("1.25"),
        "ratio": 0.3,
        "ok": 1,
        "day": "2026-11-25",
        "blob": memoryview(b"\x00\xff"),
    }
    assert canonical_rows(SCHEMA, [ROW]) == canonical_rows(SCHEMA, [stored])
    assert canonical_rows(SCHEMA, [ROW]) != canonical_rows(SCHEMA, [{**stored, "name": "b"}])


def test_rows_compare_keyed_or_one_by_one() -> None:
    schema = pa.schema([pa.field("k", pa.string()), pa.field("n", pa.int64())])
    expected = canonical_rows(schema, [{"k": "a", "n": 1}, {"k": "b", "n": 2}, {"k": "c", "n": 3}])
    held = canonical_rows(schema, [{"k": "a", "n": 0}, {"k": "a", "n": 1}, {"k": "b", "n": 5}, {"k": "d", "n": 4}])
    keyed = compare_keyed(schema, ["k"], expected, held)  # the last record of a key wins
    assert (keyed.matching, keyed.missing, keyed.extra, keyed.different) == (1, 1, 1, 1)
    assert not keyed.exact and len(keyed.examples) == 3
    every = compare_all(schema, expected, [*expected, expected[0]])
    assert (every.matching, every.duplicated, every.missing, every.extra) == (3, 1, 0, 0)
    assert compare_all(schema, expected, list(reversed(expected))).exact


def test_a_sqlite_binding_reads_back_as_its_arrow_types(tmp_path: Path) -> None:
    path = tmp_path / "sink.db"
    binding = SinkBinding(sink="sqlite", table="things", mode=SinkMode.APPEND, schema=SCHEMA)
    with sqlite3.connect(path) as db:
        columns = ", ".join(f"{SQLITE.quote(f.name)} {SQLITE.sql_type('results', f)}" for f in SCHEMA)
        db.execute(f"CREATE TABLE things ({columns})")
        values = SQLITE.columns(pa.Table.from_pylist([ROW], schema=SCHEMA))
        db.execute("INSERT INTO things VALUES (?, ?, ?, ?, ?, ?, ?)", [column[0] for column in values])
    reader = SqliteReader("sqlite", path)
    assert reader.rows(binding) == [ROW]
    assert reader.last_committed("any") == -1  # no onceflow_commits table: nothing committed
    with pytest.raises(FileNotFoundError, match="does not exist"):
        SqliteReader("sqlite", tmp_path / "missing.db").rows(binding)


@pytest.mark.parametrize("command", [["job", "audit"], ["audit", "--replay"]], ids=["job-audit", "audit-replay"])
def test_the_replay_command_names_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """``onceflow job audit`` and its alias ``onceflow audit --replay`` check their arguments in the same
    function (``onceflow.spark.command.replay_audit``): the same errors, exit 2, before Spark starts."""
    job, participant = tmp_path / "job.toml", tmp_path / "participant.toml"
    replay = [*command, str(job), "--participant-config", str(participant)]
    if command == ["job", "audit"]:  # argparse knows the option is required
        with pytest.raises(SystemExit) as exited:
            onceflow(replay[:3])
        assert exited.value.code == 2
        assert "the following arguments are required: --participant-config" in capsys.readouterr().err
    else:
        assert onceflow(replay[:3]) == 2
        assert "'--participant-config': is required" in capsys.readouterr().err
    assert onceflow(replay) == 2
    assert f"'config file': {job} does not exist" in capsys.readouterr().err
    job.write_text('job = "x"\nentrypoint = "m:job\n')
    assert onceflow(replay) == 2
    assert f"'config file': {job} is not valid TOML" in capsys.readouterr().err
    job.write_text('job = "x"\nentrypoint = "m:job"\n')
    participant.write_text(f'[[sinks]]\nname = "sqlite"\nkind = "sqlite"\noptions.path = "{tmp_path / "s.db"}"\n')
    assert onceflow([*replay, "--examples", "-1"]) == 2
    assert "'--examples': must be >= 0, got -1" in capsys.readouterr().err
    assert onceflow(replay) == 2
    assert "invalid setting 'outputs'" in capsys.readouterr().err  # the job's config is named
    job.write_text(
        'job = "x"\nentrypoint = "m:job"\n[[participants]]\nsink = "pg"\ntarget = "127.0.0.1:1"\n'
        '[[outputs.results]]\nsink = "pg"\ntable = "t"\n'
    )
    participant.write_text('[[sinks]]\nname = "sqlite"\nkind = "sqlite"\n')
    assert onceflow(replay) == 2
    assert "sinks.0.sqlite.options" in capsys.readouterr().err  # the participant config's setting is named
    participant.write_text(f'[[sinks]]\nname = "sqlite"\nkind = "sqlite"\noptions.path = "{tmp_path / "s.db"}"\n')
    assert onceflow(replay) == 2
    assert "uses sink(s) pg, which the participant config does not host (it hosts sqlite)" in capsys.readouterr().err
