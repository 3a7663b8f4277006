"""Decode AccessEvent values batch by batch (``mapInArrow``), column by column; undecodable ones are dead letters."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.avro.single_object import MAGIC
from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.core.errors import CorruptRecord, SerializationError
from onceflow.spark.job.columnar import Mask, decode_access_events
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
_HEADER = MAGIC + ACCESS_EVENT_SERDE.fingerprint
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


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

    Steps:
        1. Decode every record column by column (:mod:`onceflow.spark.job.columnar`): no Python per
           record for the records it vouches for.
        2. Decode the others one by one with the AccessEvent serde: a record it cannot decode is a
           dead letter naming why; the end-of-input row passes with the end of time as its event
           time (see :mod:`onceflow.spark.job.end_of_input`).
        3. Put the rows of both back in the batch's order; the ``passthrough`` columns of ``batch``
           (long integers, such as the replay's batch watermark) follow them unchanged.
    """
    names = [("event_time" if f == "event_time_ms" else f) for f in fields]
    schema = decoded_schema(fields, passthrough)
    ends = (
        np.asarray(batch.column(END_OF_INPUT_COLUMN).fill_null(False), dtype=np.bool_)
        if END_OF_INPUT_COLUMN in batch.schema.names
        else np.zeros(batch.num_rows, dtype=np.bool_)
    )
    # Step 1
    fast = decode_access_events(batch.column("value"), _HEADER, names)
    ok = fast.ok & ~ends
    fast_arrays = [fast.arrays[name] for name in names]
    if not ok.all():
        fast_arrays = [array.filter(pa.array(~ends[fast.ok])) for array in fast_arrays]
    # Step 2
    columns, kept, dead = _decode_rows(batch, np.flatnonzero(~ok), fields, names, ends)
    # Step 3
    if not kept:
        arrays = fast_arrays
        taken = np.flatnonzero(ok)
    else:
        rows = np.concatenate([np.flatnonzero(ok), np.asarray(kept, dtype=np.int64)])
        order = pa.array(np.argsort(rows, kind="stable"))
        arrays = [
            pa.concat_arrays([array, pa.array(column, field.type)]).take(order)
            for array, column, field in zip(fast_arrays, columns, schema, strict=False)
        ]
        taken = np.sort(rows)
    if passthrough:
        index = pa.array(taken, pa.int64())
        arrays += [batch.column(name).take(index).cast(pa.int64()) for name in passthrough]
    return pa.RecordBatch.from_arrays(arrays, schema=schema), dead


def _decode_rows(
    batch: pa.RecordBatch, indices: npt.NDArray[np.int64], fields: Sequence[str], names: Sequence[str], ends: Mask
) -> tuple[list[list[object]], list[int], list[DeadLetter]]:
    """Step 2 of :func:`decode_batch` for the rows at ``indices``: (columns, kept row indices, dead letters)."""
    columns: list[list[object]] = [[] for _ in fields]
    kept: list[int] = []
    dead: list[DeadLetter] = []
    if not len(indices):
        return columns, kept, dead
    values = batch.column("value")
    end_row = [_END_ROW.get(f, "") for f in fields]
    for index in indices.tolist():
        if ends[index]:
            for column, item in zip(columns, end_row, strict=True):
                column.append(item)
            kept.append(index)
            continue
        value = values[index].as_py()
        try:
            if value is None:
                raise SerializationError("null value (tombstone): an AccessEvent was expected")
            event = ACCESS_EVENT_SERDE.decode(value)
            if not _INT_MIN <= event["status"] <= _INT_MAX:  # fastavro reads an Avro int without a range check
                raise CorruptRecord(f"AccessEvent status {event['status']} is out of the range of an Avro int")
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
    return columns, kept, dead


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
