"""Micro-benchmark of the results consumer's per-record decoding: a value of a stored topic to its row.

Assumptions:
- the records are IP-count results (``window_start``, ``window_end``, ``ip``, ``count``), held in
  memory: the timing covers the decoder only (no Kafka, no store);
- "avro": single-object encoded values of onceflow's own ``IpCount`` schema, resolved without the
  schemas topic (its fingerprint is built in), decoded by the consumer's ``AvroDecoder``;
- "json": the same rows as the Kafka sink's JSON (ISO-8601 timestamps), read by ``JsonDecoder``
  into declared columns, including its check that the row fits them;
- single thread, CPython; prints the median µs per record over ``--runs`` runs of ``--records``.
  To compare two commits, run it with the other commit's sources first on ``PYTHONPATH``.

    .venv/bin/python bench/consumer_records.py --records 20000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import pyarrow as pa

from onceflow.consumer.tables.columns import parse_columns
from onceflow.consumer.tables.decode import AvroDecoder, JsonDecoder, RecordDecoder
from onceflow.core.avro import IP_COUNT_SCHEMA, SingleObjectSerde
from onceflow.core.avro.schemas_topic import SchemasTopic

W0 = 1_767_225_600_000


def avro_values(n: int) -> list[bytes]:
    serde: SingleObjectSerde[dict[str, Any]] = SingleObjectSerde(IP_COUNT_SCHEMA, logical_types=False)
    return [
        serde.encode({"window_start": W0, "window_end": W0 + 5000, "ip": f"10.0.{i % 256}.{i % 7}", "count": i})
        for i in range(n)
    ]


def json_values(n: int) -> list[bytes]:
    window = {"window_start": "2026-01-01T00:00:00+00:00", "window_end": "2026-01-01T00:00:05+00:00"}
    return [json.dumps({**window, "ip": f"10.0.{i % 256}.{i % 7}", "count": i}).encode() for i in range(n)]


def median_us(decoder: RecordDecoder, values: list[bytes], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for value in values:
            decoder.decode(value)
        times.append((time.perf_counter() - started) / len(values) * 1e6)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pa.Table.from_pylist([{"warm": 0}])  # pyarrow's first conversion imports pandas: not part of a record's cost
    columns = {"window_start": "timestamp not null", "window_end": "timestamp not null"}
    schema = parse_columns("results", {**columns, "ip": "string not null", "count": "long not null"})
    assert schema is not None
    decoders: dict[str, tuple[RecordDecoder, list[bytes]]] = {
        "avro": (AvroDecoder(SchemasTopic("127.0.0.1:9"), logical_types=False), avro_values(args.records)),
        "json": (JsonDecoder(schema), json_values(args.records)),
    }
    for name, (decoder, values) in decoders.items():
        median, times = median_us(decoder, values, args.runs)
        print(f"{name}: {median:.2f} µs a record (runs: {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
