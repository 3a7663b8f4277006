"""The Kafka participant for any schema: Avro with the writer schema in the schemas topic, JSON,
several topics in one transaction, a redo from the journal's bindings, and refused types."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import SinkBinding, SinkMode, TransactionId, ValueFormat
from onceflow.contract.staging import StagedFile, StagingWriter
from onceflow.core.avro import IP_COUNT_SCHEMA, schema_fingerprint
from onceflow.core.avro.arrow import avro_schema
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, IP_COUNT_RECORD_NAME
from onceflow.sinks.exceptions import BindingRejected
from onceflow.sinks.kafka import KafkaParticipant
from onceflow.testing.broker.clients import read_topic

WIDE = pa.schema(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("small", pa.int32()),
        pa.field("ratio", pa.float64()),
        pa.field("price", pa.decimal128(12, 3)),
        pa.field("ok", pa.bool_()),
        pa.field("raw", pa.binary()),
        pa.field("day", pa.date32()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
    ]
)
ROWS: list[dict[str, Any]] = [
    {
        "name": "ü",
        "n": 2**40,
        "small": -7,
        "ratio": 0.25,
        "price": decimal.Decimal("1234.500"),
        "ok": True,
        "raw": b"\x00\xff",
        "day": dt.date(2026, 11, 24),
        "at": dt.datetime(2026, 11, 24, 1, 2, 3, 456789, tzinfo=dt.UTC),
    },
    {k: (v if k == "name" else None) for k, v in {**dict.fromkeys(WIDE.names), "name": "nulls"}.items()},
]


@pytest.fixture
def sink(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[KafkaParticipant]:
    participant = KafkaParticipant(
        "kafka", KafkaSettings(bootstrap_servers=broker.bootstrap_servers), state_dir=tmp_path / "state", timeout_s=30
    )
    yield participant
    participant.close()


def _stage(root: Path, batch: int, output: str, rows: list[dict[str, Any]]) -> list[StagedFile]:
    return [StagingWriter(str(root), "job", batch).write(f"part-{output}", rows, WIDE, output=output)]


def _binding(topic: str, output: str = "results", **more: Any) -> SinkBinding:
    return SinkBinding(sink="kafka", output=output, topic=topic, mode=SinkMode.APPEND, schema=WIDE, **more)


def test_the_ip_count_output_derives_the_ip_count_fingerprint() -> None:
    derived = avro_schema(IP_COUNT_ARROW_SCHEMA, IP_COUNT_RECORD_NAME)
    assert schema_fingerprint(derived) == schema_fingerprint(IP_COUNT_SCHEMA)


def test_avro_and_json_round_trip_and_two_topics_commit_together(
    sink: KafkaParticipant, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    avro = _binding("wide_avro", keys=("name",), headers=("small",))
    as_json = _binding("wide_json", output="copies", value_format=ValueFormat.JSON, keys=("name", "at"))
    sink.prepare_bindings("job", [avro, as_json])
    files = _stage(tmp_path, 0, "results", ROWS) + _stage(tmp_path, 0, "copies", ROWS[:1])
    assert sink.prepare(TransactionId("job", 0), files, [avro, as_json]).vote_commit
    assert read_topic(broker.bootstrap_servers, "wide_avro", idle_timeout=0.5) == []
    sink.commit(TransactionId("job", 0))

    records = read_topic(broker.bootstrap_servers, "wide_avro", idle_timeout=0.5)
    reader = SchemasTopic(broker.bootstrap_servers)  # a fresh reader: the schema comes from the topic
    assert [reader.decode(r.value or b"") for r in records] == ROWS
    assert [r.key for r in records] == [b"\xc3\xbc", b"nulls"]
    assert [r.headers for r in records] == [(("small", b"-7"),), (("small", None),)]
    copies = read_topic(broker.bootstrap_servers, "wide_json", idle_timeout=0.5)
    (copy,) = [json.loads(r.value or b"") for r in copies]
    assert [r.key for r in copies] == [b'["\\u00fc","2026-11-24 01:02:03.456789+00:00"]']
    assert copy["price"] == "1234.500" and copy["day"] == "2026-11-24"
    assert copy["at"] == "2026-11-24T01:02:03.456789+00:00"
    assert base64.b64decode(copy["raw"]) == b"\x00\xff"

    # an aborted transaction leaves nothing in either topic
    assert sink.prepare(TransactionId("job", 1), _stage(tmp_path, 1, "results", ROWS), [avro, as_json]).vote_commit
    sink.abort(TransactionId("job", 1))
    assert len(read_topic(broker.bootstrap_servers, "wide_avro", idle_timeout=0.5)) == 2
    assert len(read_topic(broker.bootstrap_servers, "wide_json", idle_timeout=0.5)) == 1


def test_a_restarted_participant_redoes_a_commit_with_the_journals_bindings(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    settings = KafkaSettings(bootstrap_servers=broker.bootstrap_servers)
    binding = _binding("redo_json", value_format=ValueFormat.JSON)
    first = KafkaParticipant("kafka", settings, state_dir=tmp_path / "state", timeout_s=30)
    first.prepare_bindings("job", [binding])
    assert first.prepare(TransactionId("job", 0), _stage(tmp_path, 0, "results", ROWS), [binding]).vote_commit
    first.close()  # the open Kafka transaction is lost with the process
    second = KafkaParticipant("kafka", settings, state_dir=tmp_path / "state", timeout_s=30)
    try:
        assert second.list_prepared() == [TransactionId("job", 0)]
        second.commit(TransactionId("job", 0))  # no files, no bindings given: the journal has both
    finally:
        second.close()
    names = [json.loads(r.value or b"")["name"] for r in read_topic(broker.bootstrap_servers, "redo_json")]
    assert names == ["ü", "nulls"]


def test_an_unsupported_type_is_refused_naming_the_column(sink: KafkaParticipant) -> None:
    schema = pa.schema([pa.field("tags", pa.list_(pa.string()))])
    binding = SinkBinding(sink="kafka", topic="bad", mode=SinkMode.APPEND, schema=schema)
    with pytest.raises(BindingRejected, match=r"topic 'bad' .*column 'tags' has type list<item: string>"):
        sink.prepare_bindings("job", [binding])
