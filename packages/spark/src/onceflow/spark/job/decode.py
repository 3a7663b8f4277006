"""Decode AccessEvent values batch by batch (``mapInArrow``); undecodable records become dead letters."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.core.errors import SerializationError
from onceflow.spark.job.dead_letters import DeadLetter, DeadLetterSink
from onceflow.spark.job.end_of_input import END_OF_INPUT_COLUMN
from onceflow.spark.worker_logging import ensure_worker_logging

#: Every field of an AccessEvent as the decoder emits it; event time stays epoch milliseconds
#: (``event_time_ms``) until Spark casts it.
EVENT_FIELDS: dict[str, pa.DataType] = {
    "event_time_ms": pa.int64(),
    "ip": pa.string(),
    "method": pa.string(),
    "path": pa.string(),
    "status": pa.int32(),
    "bytes": pa.int64(),
    "user_agent": pa.string(),
}
_SPARK_TYPES = {pa.int64(): "long", pa.string(): "string", pa.int32(): "int"}
#: What the end-of-input row carries in each field (it is filtered out after the watermark saw it).
_END_ROW: dict[str, object] = {"event_time_ms": END_OF_INPUT_TIME_MS, "status": 0, "bytes": 0}


def decoded_schema(fields: Sequence[str], passthrough: Sequence[str] = ()) -> pa.Schema:
    """The decoder's rows: the AccessEvent ``fields``, then the ``passthrough`` source columns (longs)."""
    unknown = [f for f in fields if f not in EVENT_FIELDS]
    if unknown:
        raise ValueError(f"unknown AccessEvent field(s) {unknown}; known: {', '.join(EVENT_FIELDS)}")
    return pa.schema([pa.field(f, EVENT_FIELDS[f]) for f in fields] + [pa.field(c, pa.int64()) for c in passthrough])


def decoded_schema_ddl(fields: Sequence[str], passthrough: Sequence[str] = ()) -> str:
    """The Spark DDL of :func:`decoded_schema` (what ``mapInArrow`` is told it returns).

    Every column is NOT NULL: an AccessEvent's fields are all required, and so are the outputs
    computed from them (the IP-count output is then the IpCount record, four required fields).
    """
    schema = decoded_schema(fields, passthrough)
    return ", ".join(f"{field.name} {_SPARK_TYPES[field.type]} NOT NULL" for field in schema)


def decode_batch(
    batch: pa.RecordBatch, fields: Sequence[str], passthrough: Sequence[str] = ()
) -> tuple[pa.RecordBatch, list[DeadLetter]]:
    """The ``fields`` of every decodable record of ``batch``, and a dead letter for each other one.

    The end-of-input row passes with the end of time as its event time (see
    :mod:`onceflow.spark.job.end_of_input`). The ``passthrough`` columns of ``batch`` (long
    integers, such as the replay's batch watermark) follow the decoded rows unchanged.
    """
    values = batch.column("value").to_pylist()
    ends = batch.column(END_OF_INPUT_COLUMN).to_pylist() if END_OF_INPUT_COLUMN in batch.schema.names else None
    names = [("event_time" if f == "event_time_ms" else f) for f in fields]
    columns: list[list[object]] = [[] for _ in fields]
    dead: list[DeadLetter] = []
    kept: list[int] = []
    decode = ACCESS_EVENT_SERDE.decode
    end_row = [_END_ROW.get(f, "") for f in fields]
    for index, value in enumerate(values):
        if ends is not None and ends[index]:
            for column, item in zip(columns, end_row, strict=True):
                column.append(item)
            kept.append(index)
            continue
        try:
            if value is None:
                raise SerializationError("null value (tombstone): an AccessEvent was expected")
            event = decode(value)
        except SerializationError as exc:
            row = batch.slice(index, 1).to_pylist()[0]
            dead.append(
                DeadLetter(
                    key=row["key"],
                    value=value,
                    reason=f"{type(exc).__name__}: {exc}",
                    topic=row["topic"],
                    partition=row["partition"],
                    offset=row["offset"],
                )
            )
            continue
        for column, name in zip(columns, names, strict=True):
            column.append(event[name])  # type: ignore[literal-required]
        kept.append(index)
    schema = decoded_schema(fields, passthrough)
    arrays = [pa.array(column, field.type) for column, field in zip(columns, schema, strict=False)]
    if passthrough:
        taken = pa.array(kept, pa.int64())
        arrays += [batch.column(name).take(taken).cast(pa.int64()) for name in passthrough]
    return pa.RecordBatch.from_arrays(arrays, schema=schema), dead


def access_event_decoder(
    fields: Sequence[str], dead_letters: Callable[[], DeadLetterSink], passthrough: Sequence[str] = ()
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: source rows in, the AccessEvent ``fields`` out.

    Dead letters go to the sink ``dead_letters()`` makes for the task; it is closed before the
    task's last batch is handed on, so a task only succeeds once its rejected records are staged
    (exactly-once jobs) or acknowledged by the dead-letter topic (the at-least-once baseline).
    """
    wanted, carried = tuple(fields), tuple(passthrough)

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ensure_worker_logging()
        sink = dead_letters()
        for batch in batches:
            decoded, dead = decode_batch(batch, wanted, carried)
            sink.add(dead)
            if decoded.num_rows:
                yield decoded
        sink.close()

    return decode_partition
