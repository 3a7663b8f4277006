"""Three jobs at once through one coordinator and one participant server, with kill -9 everywhere.

The example jobs run side by side on the same source topic:

- ``ipcount`` (append, the driver staging its rows): counts per (5 s window, ip) upserted into SQLite
  and PostgreSQL and produced as Avro records to Kafka; its undecodable records are the
  ``dead_letters`` output, appended to a SQLite table in the same transactions;
- ``traffic`` (update): requests and bytes per (1-minute window, path, status class), upserted into
  PostgreSQL and SQLite;
- ``errors`` (append, no natural key): every 5xx request appended to Kafka (JSON), SQLite and
  PostgreSQL, and its derived output ``bot_errors`` (the 5xx crawlers met, computed from each
  micro-batch) appended to SQLite and PostgreSQL in the same transactions.

While the input arrives in rounds, the test kill -9s the drivers (two per round), the coordinator,
the participant server and the broker: 10 kills in 3 rounds. Afterwards every sink of every job equals a
plain-Python computation from the generator's events: no row missing, none doubled, none wrong.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.ipcount.traffic.model import TrafficModel, event
from onceflow.spark.runner import start_query
from onceflow.spark.sink import foreach_batch
from onceflow.spark.sink.messages import StagedFileMessage
from onceflow.spark.sink.options import SinkOptions
from onceflow.spark.sink.transaction import stage_driver_output
from onceflow.testing.broker.clients import create_topic, read_topic
from onceflow.testing.spark.input import encoded_events, produce_events

from .conftest import TEST_SPARK, job_settings
from .driver_process import DriverProcess
from .system import SinkSystem, end_input, recent_model, truth, wait_until

pytestmark = pytest.mark.slow

ROUNDS = 3
EVENTS_PER_ROUND = 1_500
#: Undecodable values among each round's events (they become dead letters).
GARBAGE = (b"", b"\x00", b"not avro at all", b"\xc3\x01" + b"\xff" * 8, b'{"ip": "1.2.3.4"}')
MINUTE_MS = 60_000

Row = tuple[Any, ...]


def _bindings_config(system: SinkSystem) -> dict[str, dict[str, Any]]:
    """The three jobs' own settings (the rest is shared)."""
    return {
        "ipcount": {
            "entrypoint": "onceflow.ipcount.job:job",
            "output_mode": "append",
            "stage_on": "driver",  # through kill -9s, with its dead letters in the same transactions
            "outputs": {
                "results": [
                    {"sink": "sqlite", "table": "ip_counts", "mode": "upsert", "keys": ["window_start", "ip"]},
                    {"sink": "postgres", "table": "ip_counts", "mode": "upsert", "keys": ["window_start", "ip"]},
                    {"sink": "kafka", "topic": "ipcount_results", "keys": ["ip"], "value_format": "avro"},
                ],
                "dead_letters": [{"sink": "sqlite", "table": "ipcount_dead_letters", "mode": "append"}],
            },
        },
        "traffic": {
            "entrypoint": "onceflow.spark.examples.traffic:job",
            "output_mode": "update",
            "params": {"window": "1 minute", "lateness": "5 seconds"},
            "outputs": {
                "results": [
                    {"sink": "postgres", "table": "traffic", "keys": ["window_start", "path", "status_class"]},
                    {"sink": "sqlite", "table": "traffic", "keys": ["window_start", "path", "status_class"]},
                ]
            },
        },
        "errors": {
            "entrypoint": "onceflow.spark.examples.server_errors:job",
            "output_mode": "append",
            "outputs": {
                "results": [
                    {"sink": "kafka", "topic": "server_errors", "mode": "append", "value_format": "json"},
                    {"sink": "sqlite", "table": "server_errors", "mode": "append"},
                    {"sink": "postgres", "table": "server_errors", "mode": "append"},
                ],
                "bot_errors": [
                    {"sink": "sqlite", "table": "bot_errors", "mode": "append"},
                    {"sink": "postgres", "table": "bot_errors", "mode": "append"},
                ],
            },
        },
    }


# --- the truth, from the generator's events -------------------------------------------------------


def _events(model: TrafficModel, total: int) -> list[Any]:
    return [event(model, i) for i in range(total)]


def traffic_truth(events: list[Any]) -> dict[Row, Row]:
    totals: dict[Row, list[int]] = {}
    for e in events:
        key = (e["event_time"] - e["event_time"] % MINUTE_MS, e["path"], f"{e['status'] // 100}xx")
        value = totals.setdefault(key, [0, 0])
        value[0] += 1
        value[1] += e["bytes"]
    return {k: tuple(v) for k, v in totals.items()}


def errors_truth(events: list[Any]) -> Counter[Row]:
    kinds = {503: "unavailable", 504: "timeout"}
    return Counter(
        (
            e["event_time"],
            e["ip"],
            e["method"],
            e["path"],
            e["status"],
            e["bytes"],
            kinds.get(e["status"], "error"),
            any(word in e["user_agent"].lower() for word in ("bot", "crawler", "spider")),
        )
        for e in events
        if e["status"] >= 500
    )


def bot_errors_truth(errors: Counter[Row]) -> Counter[Row]:
    """The ``bot_errors`` rows of the server errors ``errors`` (those a crawler met); some, or it checks nothing."""
    bots = Counter[Row]()
    for (t, ip, _m, path, status, _b, _k, bot), n in errors.items():
        if bot:
            bots[(t, ip, path, status)] += n
    assert bots, "the generator's crawlers met no server error: bot_errors checks nothing"
    return bots


# --- reading the sinks back ------------------------------------------------------------------------


def _millis(value: Any) -> int:
    """A stored timestamp as epoch milliseconds, whatever the sink stored (datetime, ISO text, micros)."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return int(moment.timestamp() * 1000)
    if isinstance(value, str):
        return _millis(dt.datetime.fromisoformat(value))
    if isinstance(value, int):
        return value // 1000 if value > 10**14 else value  # epoch micros, or already millis
    raise TypeError(f"not a timestamp: {value!r}")


def _rows(system: SinkSystem, where: str, query: str) -> list[Row]:
    if where == "sqlite":
        if not system.sqlite_path.exists():
            return []
        with sqlite3.connect(system.sqlite_path, timeout=30) as db:
            try:
                return [tuple(r) for r in db.execute(query).fetchall()]
            except sqlite3.OperationalError:
                return []
    with psycopg.connect(system.postgres_dsn) as conn:
        try:
            return [tuple(r) for r in conn.execute(query).fetchall()]
        except psycopg.errors.UndefinedTable:
            return []


def ipcount_tables(system: SinkSystem, where: str) -> dict[Row, int]:
    rows = _rows(system, where, "SELECT window_start, ip, count FROM ip_counts")
    return {(int(w), str(ip)): int(c) for w, ip, c in rows}


def traffic_tables(system: SinkSystem, where: str) -> dict[Row, Row]:
    rows = _rows(system, where, "SELECT window_start, path, status_class, requests, bytes FROM traffic")
    return {(_millis(w), p, s): (int(r), int(b)) for w, p, s, r, b in rows}


def errors_tables(system: SinkSystem, where: str) -> Counter[Row]:
    query = "SELECT event_time, ip, method, path, status, bytes, kind, from_bot FROM server_errors"
    return Counter(
        (_millis(t), ip, m, p, int(s), int(b), k, bool(bot))
        for t, ip, m, p, s, b, k, bot in _rows(system, where, query)
    )


def bot_errors_tables(system: SinkSystem, where: str) -> Counter[Row]:
    rows = _rows(system, where, "SELECT event_time, ip, path, status FROM bot_errors")
    return Counter((_millis(t), ip, p, int(s)) for t, ip, p, s in rows)


def errors_topic(system: SinkSystem) -> Counter[Row]:
    found: Counter[Row] = Counter()
    for record in read_topic(system.broker.bootstrap_servers, "server_errors", idle_timeout=1.0):
        assert record.value is not None
        r = json.loads(record.value)
        found[
            (
                _millis(r["event_time"]),
                r["ip"],
                r["method"],
                r["path"],
                r["status"],
                r["bytes"],
                r["kind"],
                r["from_bot"],
            )
        ] += 1
    return found


def ipcount_topic(system: SinkSystem) -> dict[Row, int]:
    """The Avro records, decoded with the writer schema resolved from the schemas topic; the last
    record of a key wins (a topic holds every result a batch emitted)."""
    from onceflow.core.avro.schemas_topic import SchemasTopic

    schemas = SchemasTopic(system.broker.bootstrap_servers)
    found: dict[Row, int] = {}
    for record in read_topic(system.broker.bootstrap_servers, "ipcount_results", idle_timeout=1.0):
        assert record.value is not None
        row = schemas.decode(record.value)
        assert record.key == row["ip"].encode()
        found[(row["window_start"], row["ip"])] = row["count"]
    return found


def dead_letter_rows(system: SinkSystem) -> list[Row]:
    return _rows(
        system, "sqlite", "SELECT source_topic, source_partition, source_offset, value FROM ipcount_dead_letters"
    )


# --- the test --------------------------------------------------------------------------------------


def test_three_jobs_through_one_coordinator_and_participant_stay_exact_across_kills(
    broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path
) -> None:
    seed = int(os.environ.get("ONCEFLOW_TEST_SEED", "2026"))
    rng = random.Random(seed)
    model = recent_model(seed)
    total = EVENTS_PER_ROUND * (ROUNDS + 1)
    events = _events(model, total)
    for topic in ("ipcount_results", "server_errors"):
        create_topic(broker.bootstrap_servers, topic, partitions=1)
    drivers = {
        job: DriverProcess(system.job_config(tmp_path, job, own), tmp_path / f"{job}.log")
        for job, own in _bindings_config(system).items()
    }
    produced = 0
    garbage = 0

    def produce_round() -> None:
        nonlocal produced, garbage
        values = encoded_events(model, produced, produced + EVENTS_PER_ROUND)
        for i, junk in enumerate(GARBAGE):
            values.insert((i + 1) * len(values) // (len(GARBAGE) + 1), junk)
        produce_events(broker.bootstrap_servers, values)
        produced += EVENTS_PER_ROUND
        garbage += len(GARBAGE)

    def ensure_running() -> None:
        for driver in drivers.values():
            if driver.process is None or driver.process.poll() is not None:
                driver.start()

    kills = 0

    def restart_coordinator() -> None:
        system.coordinator.kill()
        system.coordinator.start()

    def restart_broker() -> None:
        broker.kill()
        broker.start()

    #: Besides two drivers, each round kills these (the coordinator twice: before and after the broker).
    others: list[list[Callable[[], None]]] = [
        [restart_coordinator],
        [system.restart_participant],
        [restart_broker, restart_coordinator],
    ]
    jobs = list(drivers)
    for round_number in range(ROUNDS):
        produce_round()
        ensure_running()
        time.sleep(rng.uniform(4.0, 14.0))
        for job in (jobs[round_number % 3], jobs[(round_number + 1) % 3]):
            drivers[job].kill()
            kills += 1
        for kill in others[round_number]:
            kill()
            kills += 1
    assert kills >= 10

    produce_round()
    assert produced == total
    end_input(broker.bootstrap_servers)
    ensure_running()
    expected_ipcount = truth(model, total)
    expected_traffic = traffic_truth(events)
    expected_errors = errors_truth(events)
    expected_bot_errors = bot_errors_truth(expected_errors)

    def all_exact() -> None:
        for where in ("sqlite", "postgres"):
            assert ipcount_tables(system, where) == expected_ipcount, f"ipcount in {where}"
            assert traffic_tables(system, where) == expected_traffic, f"traffic in {where}"
            got = errors_tables(system, where)
            assert got == expected_errors, (
                f"errors in {where}: {sum(got.values())} rows, {sum(expected_errors.values())} expected"
            )
            got_bots = bot_errors_tables(system, where)
            assert got_bots == expected_bot_errors, (
                f"bot_errors in {where}: {sum(got_bots.values())} rows, {sum(expected_bot_errors.values())} expected"
            )
        assert ipcount_topic(system) == expected_ipcount, "ipcount in kafka"
        got_topic = errors_topic(system)
        assert got_topic == expected_errors, f"errors in kafka: {sum(got_topic.values())} records"
        letters = dead_letter_rows(system)
        assert len(letters) == garbage, f"{len(letters)} dead letters, {garbage} garbage records produced"
        assert len({row[:3] for row in letters}) == garbage, "a dead letter was committed twice"
        assert sorted(row[3] for row in letters) == sorted(GARBAGE * (ROUNDS + 1))

    try:
        wait_until(all_exact, timeout=420)
    finally:
        for job, driver in drivers.items():
            code = driver.stop()
            assert code == 0, f"{job} driver exit {code}:\n{driver.log()[-3000:]}"

    # The replay audit: each job's query re-run as a batch over its checkpoint equals every sink.
    configs = [tmp_path / f"{job}.toml" for job in drivers]
    exact = system.replay_audit(configs)
    assert exact.returncode == 0, exact.stdout + exact.stderr[-3000:]
    assert exact.stdout.endswith("verdict: EXACT\n"), exact.stdout
    for job in drivers:
        assert f"job {job}: EXACT" in exact.stdout, exact.stdout
    assert exact.stdout.count(": EXACT  matching=") == 11, exact.stdout  # every binding of the three jobs
    # A duplicate appended to one sink of the append-only job: that sink, and the job, are DIFFERENT.
    with psycopg.connect(system.postgres_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO server_errors SELECT * FROM server_errors LIMIT 1")
    different = system.replay_audit([tmp_path / "errors.toml"])
    assert different.returncode == 1, different.stdout + different.stderr[-3000:]
    (line,) = [text for text in different.stdout.splitlines() if "results -> postgres/server_errors" in text]
    assert "DIFFERENT" in line and "duplicated=1" in line and "missing=0" in line, different.stdout
    assert "sinks of output results: DIFFER from one another" in different.stdout, different.stdout
    assert different.stdout.endswith("verdict: DIFFERENT\n"), different.stdout


def test_a_job_whose_table_does_not_fit_is_refused_at_start(
    broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path
) -> None:
    """Steps:
    1. PostgreSQL already has a ``server_errors`` table whose ``status`` column is text.
    2. The errors job starts on it: the coordinator has the participant check the job's bindings
       when the driver registers, and the participant refuses the table.
    3. The driver exits 2 (a job definition error, not restarted) before any batch, and its log names
       the table, the column and the mismatch; nothing was written.
    """
    # Step 1
    with psycopg.connect(system.postgres_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE server_errors (event_time timestamptz, ip text, method text, path text, status text, "
            "bytes bigint, kind text, from_bot boolean)"
        )
    create_topic(broker.bootstrap_servers, "server_errors", partitions=1)
    produce_events(broker.bootstrap_servers, encoded_events(recent_model(7), 0, 200))
    # Step 2
    own = _bindings_config(system)["errors"]
    driver = DriverProcess(system.job_config(tmp_path, "errors", own), tmp_path / "errors.log").start()
    # Step 3
    code = driver.wait(180)
    log = driver.log()
    assert code == 2, f"driver exit {code}:\n{log[-3000:]}"
    assert "server_errors" in log and "'status'" in log, log[-3000:]
    assert "query.starting" not in log, "the query started although its table was refused"
    with psycopg.connect(system.postgres_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM server_errors").fetchone() == (0,)
    assert _rows(system, "sqlite", "SELECT count(*) FROM server_errors") in ([], [(0,)])


def test_the_driver_stages_every_output_of_a_batch_in_one_transaction(
    spark: SparkSession,
    broker: EmbeddedBroker,
    system: SinkSystem,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``stage_on = "driver"`` with derived outputs: the errors job collects ``results`` and
    ``bot_errors`` on the driver, stages them there, and commits both in each batch's transaction.

    Steps:
    1. 3,000 events in rounds of 1,000 a batch, and the end of the input.
    2. The errors job runs in this process with the driver staging its rows.
    3. Every sink holds exactly the 5xx requests and the crawlers' among them, and the driver staged
       the rows of both outputs.
    """
    # Step 1
    model = recent_model(17)
    total = 3_000
    events = _events(model, total)
    create_topic(broker.bootstrap_servers, "server_errors", partitions=1)
    produce_events(broker.bootstrap_servers, encoded_events(model, 0, total))
    end_input(broker.bootstrap_servers)
    expected = errors_truth(events)
    expected_bots = bot_errors_truth(expected)
    # Step 2
    staged_rows: Counter[str] = Counter()

    def recording(options: SinkOptions, batch: int, rows: pa.Table) -> StagedFileMessage:
        staged_rows[options.output] += rows.num_rows
        return stage_driver_output(options, batch, rows)

    monkeypatch.setattr(foreach_batch, "stage_driver_output", recording)
    own = _bindings_config(system)["errors"]
    settings = job_settings(
        broker.bootstrap_servers,
        tmp_path,
        system,
        job="errors",
        entrypoint=own["entrypoint"],
        outputs=own["outputs"],
        stage_on="driver",
        source={"max_offsets_per_trigger": 1_000},
        spark={**TEST_SPARK, "query_name": "errors-driver-staged"},
    )
    query = start_query(spark, settings)

    # Step 3
    def exact() -> None:
        for where in ("sqlite", "postgres"):
            assert errors_tables(system, where) == expected, f"errors in {where}"
            assert bot_errors_tables(system, where) == expected_bots, f"bot_errors in {where}"
        assert errors_topic(system) == expected, "errors in kafka"

    try:
        wait_until(exact, timeout=180)
    finally:
        query.stop()
    assert staged_rows == {"results": expected.total(), "bot_errors": expected_bots.total()}
