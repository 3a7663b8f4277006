"""Lakehouse tables for any output: every storable type, read back through onceflow.sinks.readback, and
the check of an existing table when a job starts (create, add a nullable column, refuse naming the column)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from onceflow.contract import SinkBinding, SinkMode, TransactionId
from onceflow.contract.staging import StagingWriter
from onceflow.sinks.exceptions import BindingRejected
from onceflow.sinks.lakehouse.participant import LakehouseParticipant
from onceflow.sinks.readback import LakehouseReader, reader_for
from onceflow.sinks.server.settings import ParticipantSettings

from .lakehouse import KINDS, lakehouse_options, open_lakehouse
from .test_table_bindings import ROWS, WIDE


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def lake(tmp_path: Path, kind: str) -> Iterator[LakehouseParticipant]:
    sink = open_lakehouse(kind, tmp_path)
    yield sink
    sink.close()


def _reader(tmp_path: Path, kind: str) -> LakehouseReader:
    """The sink's reader as the replay audit opens it: from a participant config."""
    options = lakehouse_options(kind, tmp_path).model_dump()
    settings = ParticipantSettings.model_validate({"sinks": [{"name": "lake", "kind": kind, "options": options}]})
    reader = reader_for(settings.sinks[0])
    assert isinstance(reader, LakehouseReader)
    return reader


def _order(row: dict[str, Any]) -> str:
    return str(row["name"])


def _commit(
    sink: LakehouseParticipant, staging: Path, batch: int, binding: SinkBinding, rows: list[dict[str, Any]]
) -> None:
    assert binding.schema is not None
    staged = StagingWriter(str(staging), "job", batch).write("part-0", rows, binding.schema, output=binding.output)
    vote = sink.prepare(TransactionId("job", batch), [staged], [binding])
    assert vote.vote_commit, vote.reason
    sink.commit(TransactionId("job", batch))


def test_every_storable_type_round_trips(lake: LakehouseParticipant, tmp_path: Path, kind: str) -> None:
    """An append table created from the output's schema holds every type, read back as Python values."""
    binding = SinkBinding(sink="lake", output="wide", table="wide", mode=SinkMode.APPEND, schema=WIDE)
    lake.prepare_bindings("job", [binding])
    _commit(lake, tmp_path / "staging", 0, binding, ROWS)
    _commit(lake, tmp_path / "staging", 1, binding, ROWS[:1])
    with _reader(tmp_path, kind) as reader:
        assert sorted(reader.rows(binding), key=_order) == sorted([*ROWS, ROWS[0]], key=_order)
        assert reader.last_committed("job") == 1
        assert reader.last_committed("other") == -1
        assert reader.tables() == ["wide"], "the tables of the bindings only: a participant has none of its own"


def test_a_nullable_column_the_output_gained_is_added(lake: LakehouseParticipant, tmp_path: Path, kind: str) -> None:
    narrow = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("n", pa.int64())])
    wider = narrow.append(pa.field("extra", pa.string()))
    first = SinkBinding(sink="lake", table="t", mode=SinkMode.UPSERT, keys=("k",), schema=narrow)
    lake.prepare_bindings("job", [first])
    _commit(lake, tmp_path / "staging", 0, first, [{"k": "a", "n": 1}])
    second = SinkBinding(sink="lake", table="t", mode=SinkMode.UPSERT, keys=("k",), schema=wider)
    lake.prepare_bindings("job", [second])
    _commit(lake, tmp_path / "staging", 1, second, [{"k": "b", "n": 2, "extra": "x"}])
    columns, keys = lake.format.describe("t")
    assert columns is not None and [c.name for c in columns] == ["k", "n", "extra"] and keys == ["k"]
    with _reader(tmp_path, kind) as reader:
        assert sorted(reader.rows(second), key=str) == [
            {"k": "a", "n": 1, "extra": None},
            {"k": "b", "n": 2, "extra": "x"},
        ]


def test_a_table_that_does_not_fit_is_refused_naming_the_column(lake: LakehouseParticipant) -> None:
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("n", pa.int64(), nullable=False)])
    lake.prepare_bindings(
        "job", [SinkBinding(sink="lake", table="t", mode=SinkMode.UPSERT, keys=("k",), schema=schema)]
    )

    other_type = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("n", pa.string())])
    with pytest.raises(BindingRejected, match=r"table 't'.*column 'n' has type"):
        lake.prepare_bindings("j", [SinkBinding(sink="lake", table="t", mode=SinkMode.APPEND, schema=other_type)])
    lacking = pa.schema([pa.field("k", pa.string(), nullable=False)])
    with pytest.raises(BindingRejected, match=r"column 'n' is NOT NULL"):
        lake.prepare_bindings("j", [SinkBinding(sink="lake", table="t", mode=SinkMode.APPEND, schema=lacking)])
    new_required = schema.append(pa.field("m", pa.int64(), nullable=False))
    with pytest.raises(BindingRejected, match=r"column 'm' .* is missing; only nullable columns are added"):
        lake.prepare_bindings("j", [SinkBinding(sink="lake", table="t", mode=SinkMode.APPEND, schema=new_required)])
    with pytest.raises(BindingRejected, match=r"upsert keys \(n\) are not the table's primary key \(k\)"):
        lake.prepare_bindings(
            "j", [SinkBinding(sink="lake", table="t", mode=SinkMode.UPSERT, keys=("n",), schema=schema)]
        )
    with pytest.raises(BindingRejected, match="needs a table"):
        lake.prepare_bindings("j", [SinkBinding(sink="lake", topic="t", schema=schema)])
    with pytest.raises(BindingRejected, match="may not start with '_'"):
        lake.prepare_bindings("j", [SinkBinding(sink="lake", table="_delta_log", mode=SinkMode.APPEND, schema=schema)])
    twice = [SinkBinding(sink="lake", output=o, table="t", mode=SinkMode.APPEND, schema=schema) for o in ("a", "b")]
    with pytest.raises(BindingRejected, match="output 'a' of the job already writes this table"):
        lake.prepare_bindings("j", twice)
    unsupported = pa.schema([pa.field("k", pa.list_(pa.int64()))])
    with pytest.raises(BindingRejected, match="column 'k' has type list"):
        lake.prepare_bindings("j", [SinkBinding(sink="lake", table="u", mode=SinkMode.APPEND, schema=unsupported)])


def test_a_null_in_a_not_null_column_votes_no(lake: LakehouseParticipant, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("n", pa.int64(), nullable=False)])
    binding = SinkBinding(sink="lake", table="t", mode=SinkMode.APPEND, schema=schema)
    lake.prepare_bindings("job", [binding])
    loose = pa.schema([pa.field("k", pa.string()), pa.field("n", pa.int64())])
    staged = StagingWriter(str(tmp_path / "staging"), "job", 0).write("p", [{"k": "a", "n": None}], loose)
    vote = lake.prepare(TransactionId("job", 0), [staged], [binding.with_schema(loose)])
    assert not vote.vote_commit
    assert "column 'n' of table 't' is NOT NULL" in vote.reason
    assert lake.list_prepared() == []
