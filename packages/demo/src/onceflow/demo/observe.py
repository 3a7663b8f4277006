"""Reading the running pipeline from outside, through each service's public surface.

Every read answers None when the service cannot be asked right now (it may be down under chaos):
callers keep their last known value.

- input progress: the source connector's committed positions (Connect ``GetConnectorOffsets``),
  which commit in the same Kafka transaction as the events (so this counts committed data only):
  the generator's sequence numbers, or the file tailer's counts of lines, events and dead letters,
  and whether the input ended;
- results: ``SUM(count)`` over a SQLite result table (the participant's sink, the consumer store), through
  the sinks' read-back API (:mod:`onceflow.sinks.readback`), read-only;
- 2PC transactions: the coordinator's ``ListTransactions``;
- Spark: the job's Prometheus endpoint (last batch id, batch duration, watermark, rows/s);
- the top IPs of the latest closed window: the example's IP-count service's ``GetTopIps`` (on the consumer).
"""

from __future__ import annotations

import http.client
import sqlite3
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from onceflow.contract import TransactionState
from onceflow.contract.clients import ConnectClient, CoordinatorClient, RpcFailed
from onceflow.demo.components import JOB, Context, connector_name
from onceflow.ipcount.api import IpCountsClient
from onceflow.runtime.api.source import END_OF_INPUT_KEY
from onceflow.sinks.readback import SqliteReader

RPC_TIMEOUT_S = 2.0


@dataclass
class TransactionTally:
    """Transactions of the job, accumulated over every answer seen (monotone even when the coordinator
    forgets old transactions): batches committed, batches seen aborted at least once (an aborted batch
    is re-run under the same transaction id, so it may end up committed too), and those in doubt now."""

    committed_batches: set[int] = field(default_factory=set)
    aborted_batches: set[int] = field(default_factory=set)
    in_doubt: int = 0

    @property
    def committed(self) -> int:
        return len(self.committed_batches)

    @property
    def aborted(self) -> int:
        return len(self.aborted_batches)

    def add(self, batch: int, state: TransactionState) -> None:
        if state is TransactionState.COMMITTED:
            self.committed_batches.add(batch)
        elif state is TransactionState.ABORTED:
            self.aborted_batches.add(batch)


@dataclass(frozen=True)
class SparkProgress:
    last_batch: int
    batch_duration_s: float
    watermark_ms: int
    input_rows_per_s: float


@dataclass(frozen=True)
class TopIps:
    window_start_ms: int
    counts: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class InputProgress:
    """The source connector's committed progress: lines read (the generator's events are its lines),
    events, dead letters, and whether the whole input has ended."""

    lines: int = 0
    events: int = 0
    dead_letters: int = 0
    ended: bool = False


def _number(value: object) -> int:
    """A JSON number of a position (a protobuf Struct holds them as floats)."""
    return int(float(str(value)))


def input_from_offsets(offsets: Sequence[tuple[Mapping[str, object], Mapping[str, object]]]) -> InputProgress:
    """The committed progress of the generator's tasks or of the file tailer.

    Generator task ``k`` of ``n`` at ``seq`` has produced ``(seq - k) // n + 1`` events (it emits
    ``k, k + n, ...``); the tailer commits its counts with its position. The input ended when every
    source partition did (for the generator: all ``n`` of its tasks).
    """
    lines = events = dead = 0
    ended: list[bool] = []
    tasks = 0
    for partition, offset in offsets:
        if partition.get("generator") == "access-log" and "seq" in offset:
            tasks = _number(partition.get("tasks", 1))
            produced = (_number(offset["seq"]) - _number(partition.get("task", 0))) // tasks + 1
            lines, events = lines + produced, events + produced
        elif "file" in partition and "lines" in offset:
            lines += _number(offset["lines"])
            events += _number(offset.get("events", 0))
            dead += _number(offset.get("dead_letters", 0))
        else:
            continue
        ended.append(bool(offset.get(END_OF_INPUT_KEY)))
    complete = bool(ended) and all(ended) and len(ended) >= max(tasks, 1)
    return InputProgress(lines, events, dead, complete)


def produced_from_offsets(offsets: Sequence[tuple[Mapping[str, object], Mapping[str, object]]]) -> int:
    """Events committed by the source connector (see :func:`input_from_offsets`)."""
    return input_from_offsets(offsets).events


def sqlite_totals(path: Path, table: str) -> tuple[int, int] | None:
    """``(rows, SUM(count))`` of a result table through the sinks' read-back API (read-only); (0, 0)
    before the database exists, None while it cannot be read."""
    if not path.exists():
        return (0, 0)
    try:
        return SqliteReader(table, path).totals(table, "count")
    except sqlite3.Error:
        return None


def scrape(port: int, timeout: float = RPC_TIMEOUT_S) -> dict[str, float] | None:
    """Prometheus samples of ``127.0.0.1:port/metrics`` by sample name (labels dropped, last wins); None
    while the endpoint cannot answer in whole: down, or killed in the middle of an answer (a short body,
    a torn line), which a chaos run does to it."""
    samples: dict[str, float] = {}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[sample.name] = float(sample.value)
    except (OSError, http.client.HTTPException, ValueError):
        return None
    return samples


class Observer:
    """Asks the services of one run how far the pipeline got."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.tally = TransactionTally()

    def input_progress(self) -> InputProgress | None:
        try:
            with ConnectClient(self.context.target("connect"), self.context.tls, timeout_s=RPC_TIMEOUT_S) as client:
                offsets = client.get_connector_offsets(connector_name(self.context.state))
        except RpcFailed:
            return None
        pairs = [(o.partition, o.offset or {}) for o in offsets]
        return input_from_offsets(pairs)

    def transactions(self) -> TransactionTally | None:
        """The job's transactions (newest page) folded into :attr:`tally`."""
        try:
            with CoordinatorClient(
                self.context.target("coordinator"), self.context.tls, timeout_s=RPC_TIMEOUT_S
            ) as client:
                transactions = client.list_transactions(JOB, limit=1000)
        except RpcFailed:
            return None
        in_doubt = 0
        for txn in transactions:
            self.tally.add(txn.id.batch, txn.state)
            in_doubt += not txn.state.is_final
        self.tally.in_doubt = in_doubt
        return self.tally

    def spark(self) -> SparkProgress | None:
        samples = scrape(self.context.port("spark_metrics"))
        if not samples or "onceflow_spark_last_batch_id" not in samples:
            return None
        return SparkProgress(
            last_batch=int(samples["onceflow_spark_last_batch_id"]),
            batch_duration_s=samples.get("onceflow_spark_batch_duration_seconds", 0.0),
            watermark_ms=int(samples.get("onceflow_spark_watermark_seconds", 0.0) * 1000),
            input_rows_per_s=samples.get("onceflow_spark_input_rows_per_second", 0.0),
        )

    def top_ips(self, limit: int = 5) -> TopIps | None:
        try:
            with IpCountsClient(self.context.target("consumer"), self.context.tls, timeout_s=RPC_TIMEOUT_S) as client:
                reply = client.get_top_ips(limit=limit)
        except RpcFailed:
            return None
        return TopIps(reply.window_start_ms, tuple((c.ip, c.count) for c in reply.counts))

    def consumer_totals(self) -> tuple[int, int] | None:
        return sqlite_totals(self.context.consumer_store_path, "results")

    def sqlite_sink_totals(self) -> tuple[int, int] | None:
        return sqlite_totals(self.context.sqlite_sink_path, "ip_counts")
