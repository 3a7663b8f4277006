"""A whole two-phase-commit deployment on one machine: coordinator and sink participants as processes.

:class:`TwoPhaseCommitCluster` wires what docs/design.md's "Spark -> sinks" hop runs in production:

- a coordinator process (``python -m onceflow.coordinator``) whose decisions go to the Kafka
  transaction log on a broker the caller runs (the embedded broker in tests);
- one participant process (``python -m onceflow.sinks``) per sink: ``kafka`` (``ip_count_sink``),
  ``sqlite`` (a file under the work dir) and ``postgres`` (a database the caller provides), so a
  ``kill -9`` of one of them is the crash of one sink's participant; or, for a sink given ``shards``,
  one process per shard (``participants["kafka#0"]``, ``participants["kafka#1"]``, ...), all
  registered as the shards of that one sink; on request also ``delta`` (Delta tables under the work
  dir) and ``iceberg`` (Iceberg tables, their SQL catalog in SQLite);
- a staging root shared by the driver (the test), the participants and the coordinator's GC: a
  local directory by default, or ``s3://bucket/prefix`` on an S3 API store (``staging_uri``, with
  the store's ``[staging.s3]`` section or its AWS variables in ``env``).

Every process listens on 127.0.0.1 on a free port that stays the same across restarts, so the
participant targets registered with the coordinator stay valid. The cluster also acts as the
Spark driver's client (:meth:`register`, :meth:`commit`) and reads every sink back directly.

With ``standby=True`` a second coordinator runs as a hot standby (``standby.enabled``, a short
session timeout): :attr:`coordinators` holds both, the first one starts first and is the active
one, and the participants and the driver's client know both targets (they fail over).

Needs the ``onceflow-sinks`` and ``onceflow-broker`` packages next to this one (the workspace has
them); it is test and benchmark tooling, imported only by them.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Final

import grpc

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import (
    ParticipantRef,
    Shard,
    SinkBinding,
    TransactionId,
    TransactionOutcome,
    TransactionReport,
    TransactionState,
)
from onceflow.contract.clients import CoordinatorClient
from onceflow.contract.staging import S3Settings, StagedFile, StagingStore, StagingWriter, parse_staging_uri
from onceflow.core.avro import IpCount
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding, ip_count_topic_binding
from onceflow.proto.v1 import coordinator_pb2_grpc
from onceflow.sinks.postgres.schema import gid_prefix
from onceflow.sinks.readback import BindingReader, KafkaReader, LakehouseReader, PostgresReader, SqliteReader
from onceflow.testing.coordinator.process import CoordinatorProcess
from onceflow.testing.sinks.postgres import PostgresServer, fresh_database
from onceflow.testing.sinks.process import ParticipantProcess

#: The three real sinks, in the order they are registered with the coordinator.
SINKS: Final = ("kafka", "sqlite", "postgres")
#: The lakehouse sinks a cluster hosts when asked (``sinks=LAKEHOUSE_SINKS``, or with the others).
LAKEHOUSE_SINKS: Final = ("delta", "iceberg")

#: A result row as every sink stores it: ``(window_start, window_end, ip, count)``.
Row = tuple[int, int, str, int]

#: Coordinator timings for tests: quick aborts, quick commit retries, short waits.
FAST_COORDINATOR_SETTINGS: Final[Mapping[str, Any]] = {
    "prepare_timeout_ms": 5_000,
    "commit_wait_ms": 5_000,
    "abort_timeout_ms": 2_000,
    "commit_retry": {"initial_backoff_ms": 50, "max_backoff_ms": 500, "call_timeout_ms": 3_000},
    "transaction_log": {"timeout_ms": 20_000, "retain_batches": 0},
    "log": {"level": "INFO"},
}


#: What ``standby=True`` adds to the coordinators' settings: a standby takes over about 6 s (the
#: broker's minimum session timeout) after the active one stops heartbeating.
STANDBY_SETTINGS: Final[Mapping[str, Any]] = {"standby": {"enabled": True, "session_timeout_ms": 6_000}}


def row_of(row: IpCount) -> Row:
    return (row["window_start"], row["window_end"], row["ip"], row["count"])


def _row(row: Mapping[str, Any]) -> Row:
    """A sink's row as read back (:mod:`onceflow.sinks.readback`), as a comparable tuple."""
    return (int(row["window_start"]), int(row["window_end"]), str(row["ip"]), int(row["count"]))


def wait_for_log(
    process: CoordinatorProcess | ParticipantProcess, text: str, *, times: int = 1, timeout: float = 20.0
) -> None:
    """Wait until ``text`` appears ``times`` times in the last 400 lines of ``process``'s log."""
    deadline = time.monotonic() + timeout
    while process.log_tail(400).count(text) < times:
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not logged {times} times in {timeout}s:\n{process.log_tail()}")
        time.sleep(0.05)


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@contextmanager
def running_cluster(work_dir: Path, postgres: PostgresServer | None, **options: Any) -> Iterator[TwoPhaseCommitCluster]:
    """A started :class:`TwoPhaseCommitCluster` (``options`` as its constructor's) on a broker of its own
    and a fresh database of ``postgres`` (None: no ``postgres`` sink), for module fixtures and
    benchmarks; everything is stopped (and the database dropped) on exit."""
    with ExitStack() as stack:
        broker = stack.enter_context(EmbeddedBroker(work_dir / "broker"))
        dsn = stack.enter_context(fresh_database(postgres)) if postgres is not None else ""
        cluster = TwoPhaseCommitCluster(
            work_dir / "cluster", bootstrap_servers=broker.bootstrap_servers, postgres_dsn=dsn, **options
        )
        cluster.broker = broker
        stack.callback(cluster.stop)
        yield cluster.start()


class TwoPhaseCommitCluster:
    """Coordinator and participant processes for ``sinks`` on the broker at ``bootstrap_servers``.

    ``shards`` gives a sink several participant processes (``{"kafka": 2}``); the others have one.
    :attr:`participants` is keyed by participant name: the sink, or ``<sink>#<index>`` for a shard.
    ``coordinator_settings`` override :data:`FAST_COORDINATOR_SETTINGS` (nested keys merge);
    ``coordinator_env`` is the coordinator's extra environment (e.g. the crash hook, see
    :mod:`onceflow.testing.faults.coordinator`); change ``cluster.coordinator.env`` between restarts.
    ``staging_uri`` replaces the local staging directory (``work_dir/staging``); ``staging_s3`` is the
    ``[staging.s3]`` section of every process (and of the driver's writes), ``env`` the environment
    every process gets on top of this one's (e.g. the AWS variables of the store).
    ``participant_env`` is every participant's at the first start, on top of ``env``
    (:mod:`onceflow.testing.faults.participant`); change ``participants[name].env`` between restarts.
    """

    def __init__(
        self,
        work_dir: Path,
        *,
        bootstrap_servers: str,
        postgres_dsn: str,
        sinks: Sequence[str] = SINKS,
        shards: Mapping[str, int] | None = None,
        coordinator_settings: Mapping[str, Any] | None = None,
        coordinator_env: Mapping[str, str] | None = None,
        participant_env: Mapping[str, str] | None = None,
        participant_log_level: str = "INFO",
        standby: bool = False,
        staging_uri: str | None = None,
        staging_s3: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        unknown = set(sinks) - {*SINKS, *LAKEHOUSE_SINKS}
        if unknown:
            raise ValueError(f"unknown sinks {sorted(unknown)}; choose from {SINKS + LAKEHOUSE_SINKS}")
        self.work_dir = Path(work_dir)
        self.bootstrap_servers = bootstrap_servers
        self.postgres_dsn = postgres_dsn
        self.sinks = tuple(sinks)
        self.shards = {sink: int((shards or {}).get(sink, 1)) for sink in self.sinks}
        self.staging_root = self.work_dir / "staging"
        self.staging_uri = staging_uri or str(self.staging_root)
        self.env = dict(env or {})
        self._staging_s3 = dict(staging_s3 or {})
        self.store = StagingStore(S3Settings.model_validate(self._staging_s3), environ={**os.environ, **self.env})
        self.sqlite_path = self.work_dir / "sqlite" / "results.db"
        settings = _merge(FAST_COORDINATOR_SETTINGS, coordinator_settings or {})
        settings = _merge(
            settings,
            {
                "kafka": {"bootstrap_servers": bootstrap_servers},
                "staging_root": self.staging_uri,
                "staging": {"s3": self._staging_s3},
            },
        )
        if standby:
            settings = _merge(STANDBY_SETTINGS, settings)
        self.coordinator = CoordinatorProcess(
            self.work_dir / "coordinator", settings, env={**self.env, **(coordinator_env or {})}
        )
        #: Every coordinator: the first one, then the standby (if any).
        self.coordinators = [self.coordinator]
        if standby:
            self.coordinators.append(CoordinatorProcess(self.work_dir / "coordinator-standby", settings, env=self.env))
        self._participant_log_level = participant_log_level
        self._participant_env = dict(participant_env or {})
        self.participants: dict[str, ParticipantProcess] = {}
        #: The broker process, when :func:`running_cluster` started it for this cluster.
        self.broker: EmbeddedBroker | None = None
        self._client: CoordinatorClient | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> TwoPhaseCommitCluster:
        """Start the coordinator (it becomes the active one), the standby if any, then every participant
        (in parallel), and wait until all serve."""
        self.staging_root.mkdir(parents=True, exist_ok=True)
        self.coordinator.start()  # in the election group once ready: it leads before any standby joins
        for standby in self.coordinators[1:]:
            standby.start(wait=False)
        if len(self.coordinators) > 1:
            self.coordinator.wait_active()
        for standby in self.coordinators[1:]:
            standby.wait_ready()  # the participants' settings need its port
        for sink in self.sinks:
            for index, name in enumerate(self.names_of(sink)):
                settings = self.participant_settings(sink, index)
                env = {**self.env, **self._participant_env}
                process = ParticipantProcess(self._participant_dir(name), settings, env=env)
                self.participants[name] = process.start(wait=False)
        for process in self.participants.values():
            process.wait_ready()
        return self

    def shard_of(self, sink: str, index: int) -> Shard:
        return Shard(index, self.shards[sink])

    def _participant_dir(self, name: str) -> Path:
        return self.work_dir / f"participant-{name.replace('#', '-')}"

    def lakehouse_options(self, sink: str, index: int = 0) -> dict[str, Any]:
        """The options of the ``delta`` or ``iceberg`` sink: its tables under the work dir (shared by its
        shards), its journal in the participant's (shard's) directory."""
        state_dir = str(self._participant_dir(self.shard_of(sink, index).record_name(sink)) / "state")
        if sink == "delta":
            return {"root": str(self.work_dir / "lake"), "state_dir": state_dir}
        catalog = {"sqlite": str(self.work_dir / "iceberg" / "catalog.db")}
        return {"warehouse": str(self.work_dir / "iceberg" / "warehouse"), "state_dir": state_dir, "catalog": catalog}

    def participant_settings(self, sink: str, index: int = 0) -> dict[str, Any]:
        """The settings (nested dicts) of the participant process of ``sink`` (of its shard ``index``)."""
        options: dict[str, Any]
        name = self.shard_of(sink, index).record_name(sink)
        if sink in LAKEHOUSE_SINKS:
            options = self.lakehouse_options(sink, index)
        elif sink == "kafka":
            options = {
                "state_dir": str(self._participant_dir(name) / "state"),
                "topic": SINK_TOPIC,
                "kafka": {"bootstrap_servers": self.bootstrap_servers},
            }
        elif sink == "sqlite":
            options = {"path": str(self.sqlite_path)}
        else:
            options = {"dsn": self.postgres_dsn, "lock_timeout_ms": 5_000}
        return {
            "server": {"host": "127.0.0.1", "port": 0},
            "coordinator": {
                "target": self.coordinator_target,
                "rpc_timeout_s": 2.0,
                "initial_backoff_s": 0.05,
                "max_backoff_s": 0.5,
            },
            "sinks": [{"name": sink, "kind": sink, "options": options, "shard": index, "shards": self.shards[sink]}],
            "staging": {
                "roots": [self.staging_uri],
                "allowed_schemes": [parse_staging_uri(self.staging_uri).store],
                "s3": self._staging_s3,
            },
            "log": {"level": self._participant_log_level},
        }

    def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL) and close the driver's channel."""
        if self._client is not None:
            self._client.close()
            self._client = None
        for process in self.participants.values():
            process.stop()
        for coordinator in self.coordinators:
            coordinator.stop()

    def __enter__(self) -> TwoPhaseCommitCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def coordinator_target(self) -> str:
        """Every coordinator's target, comma-separated, as the participants and the driver know them."""
        return ",".join(coordinator.target for coordinator in self.coordinators)

    @property
    def refs(self) -> list[ParticipantRef]:
        """Every sink and the target of the participant process hosting it (one per shard), each with the
        IP-count results' binding (:meth:`results_binding`)."""
        return self.refs_with()

    def refs_with(self, bindings: Mapping[str, Sequence[SinkBinding]] | None = None) -> list[ParticipantRef]:
        """:attr:`refs`, each sink with its ``bindings`` (a sink not in ``bindings``: :meth:`results_binding`,
        as a job writing the IP-count example's results declares it; a participant has no defaults)."""
        chosen = bindings or {}
        return [
            ref
            for sink in self.sinks
            for ref in ParticipantRef.shards_of(
                sink,
                [p.target for p in self.processes_of(sink)],
                tuple(chosen[sink]) if sink in chosen else (self.results_binding(sink),),
            )
        ]

    @staticmethod
    def results_binding(sink: str) -> SinkBinding:
        """The IP-count results' binding of ``sink``: its ``ip_count_sink`` topic (Kafka), else its
        ``ip_counts`` table (upserted by window and ip)."""
        return ip_count_topic_binding(sink) if sink == "kafka" else ip_count_table_binding(sink)

    def processes_of(self, sink: str) -> list[ParticipantProcess]:
        """The participant processes of ``sink``, by shard index."""
        return [self.participants[name] for name in self.names_of(sink)]

    def logs(self, lines: int = 40) -> str:
        """The tail of every process's log, for assertion messages."""
        parts = [f"--- {c.work_dir.name} ---\n{c.log_tail(lines)}" for c in self.coordinators]
        parts += [f"--- participant {sink} ---\n{p.log_tail(lines)}" for sink, p in self.participants.items()]
        return "\n".join(parts)

    # -- the Spark driver's side -----------------------------------------------------------------

    @property
    def client(self) -> CoordinatorClient:
        """The driver's coordinator client, on one channel (it reconnects after coordinator restarts)."""
        if self._client is None:
            self._client = CoordinatorClient(self.coordinator_target)
        return self._client

    @property
    def stub(self) -> coordinator_pb2_grpc.TransactionCoordinatorStub:
        """The raw stub of :attr:`client`, for requests the client would not build (bad input)."""
        return self.client.stub

    def register(
        self,
        job: str,
        writer_id: str = "driver",
        *,
        bindings: Mapping[str, Sequence[SinkBinding]] | None = None,
        timeout: float = 30.0,
    ) -> int:
        """RegisterWriter, then RegisterParticipants with every sink (and ``bindings`` per sink); returns the
        new writer epoch."""
        epoch = int(self.client.register_writer(job, writer_id, timeout_s=timeout).epoch)
        self.client.register_participants(job, epoch, self.refs_with(bindings), timeout_s=timeout)
        return epoch

    def stage(self, job: str, batch: int, *files: Sequence[IpCount], attempt: int = 0) -> list[StagedFile]:
        """Write each list of rows as one staged file of ``job``'s ``batch``, as Spark tasks do."""
        writer = StagingWriter(self.staging_uri, job, batch, store=self.store)
        return [
            writer.write(f"part-{i}-attempt-{attempt}", rows, IP_COUNT_ARROW_SCHEMA) for i, rows in enumerate(files)
        ]

    def commit(
        self, job: str, epoch: int, batch: int, files: Iterable[StagedFile], *, timeout: float = 60.0
    ) -> TransactionOutcome:
        """CommitTransaction, as the driver's ``commit(messages, batchId)`` calls it."""
        return self.client.commit_transaction(TransactionId(job, batch), epoch, list(files), timeout_s=timeout)

    def transaction(self, job: str, batch: int, *, timeout: float = 10.0) -> TransactionReport:
        return self.client.get_transaction(TransactionId(job, batch), timeout_s=timeout)

    def wait_for_state(self, job: str, batch: int, state: TransactionState, timeout: float = 30.0) -> TransactionReport:
        """Poll GetTransaction until the transaction is in ``state`` (AssertionError with the logs if not)."""
        deadline = time.monotonic() + timeout
        txn: TransactionReport | None = None
        while time.monotonic() < deadline:
            try:
                txn = self.transaction(job, batch)
            except grpc.RpcError:
                txn = None  # the coordinator is (re)starting
            if txn is not None and txn.state is state:
                return txn
            time.sleep(0.05)
        seen = txn.state.value if txn is not None else "no answer"
        raise AssertionError(
            f"{TransactionId(job, batch)} is {seen}, not {state.value} after {timeout}s\n{self.logs()}"
        )

    # -- reading the sinks back ------------------------------------------------------------------

    def lakehouse_reader(self, sink: str) -> LakehouseReader:
        """The reader of the ``delta`` or ``iceberg`` sink's tables (read-only), whole (every shard)."""
        from onceflow.sinks.delta.settings import DeltaOptions
        from onceflow.sinks.iceberg.settings import IcebergOptions
        from onceflow.sinks.lakehouse.open import open_format

        kind = DeltaOptions if sink == "delta" else IcebergOptions
        options = kind.model_validate(self.lakehouse_options(sink))
        return LakehouseReader(sink, open_format(sink, options, create=False), shards=self.shards[sink])

    def reader(self, sink: str) -> BindingReader:
        """The read-back view of ``sink``, whole (every shard of it)."""
        if sink in LAKEHOUSE_SINKS:
            return self.lakehouse_reader(sink)
        if sink == "kafka":
            kafka = KafkaSettings(bootstrap_servers=self.bootstrap_servers)
            return KafkaReader(sink, kafka, SINK_TOPIC, SINK_COMMITS_TOPIC, timeout_s=60, shards=self.shards[sink])
        if sink == "sqlite":
            return SqliteReader(sink, self.sqlite_path, shards=self.shards[sink])
        return PostgresReader(sink, self.postgres_dsn, shards=self.shards[sink])

    def kafka_rows(self) -> list[Row]:
        """Every row of ``ip_count_sink`` visible to a read_committed consumer, sorted (duplicates kept)."""
        return sorted(_row(row) for row in self.reader("kafka").rows(ip_count_topic_binding("kafka")))

    def sqlite_rows(self) -> list[Row]:
        return sorted(_row(row) for row in self.reader("sqlite").rows(ip_count_table_binding("sqlite")))

    def postgres_rows(self) -> list[Row]:
        return sorted(_row(row) for row in self.reader("postgres").rows(ip_count_table_binding("postgres")))

    def rows_of(self, binding: SinkBinding) -> list[Row]:
        """The IP-count rows ``binding`` holds in its sink (a table or topic of the IP-count schema), sorted,
        duplicates kept."""
        with self.reader(binding.sink) as reader:
            return sorted(_row(row) for row in reader.rows(binding))

    def sink_rows(self) -> dict[str, list[Row]]:
        """Each sink's rows, read directly from the sink (Kafka topic, SQLite file, PostgreSQL table, the
        current version of a Delta or Iceberg table)."""
        readers = {"kafka": self.kafka_rows, "sqlite": self.sqlite_rows, "postgres": self.postgres_rows}
        return {
            sink: readers[sink]() if sink in readers else self.rows_of(ip_count_table_binding(sink))
            for sink in self.sinks
        }

    def last_committed(self, job: str) -> dict[str, int]:
        """Each sink's last batch of ``job`` committed by every shard of it (the readers' view)."""
        found: dict[str, int] = {}
        for sink in self.sinks:
            with self.reader(sink) as reader:
                found[sink] = reader.last_committed(job)
        return found

    def committed_batches(self, job: str) -> dict[str, list[int]]:
        """The batches of ``job`` each database sink's participant (each shard) recorded as committed
        (its commits table), by participant name."""
        import psycopg

        found: dict[str, list[int]] = {}
        if "sqlite" in self.sinks:
            with sqlite3.connect(self.sqlite_path) as db:
                for name in self.names_of("sqlite"):
                    rows = db.execute(
                        "SELECT batch FROM onceflow_commits WHERE sink = ? AND job = ? ORDER BY batch", (name, job)
                    )
                    found[name] = [int(batch) for (batch,) in rows]
        if "postgres" in self.sinks:
            with psycopg.connect(self.postgres_dsn) as conn:
                for name in self.names_of("postgres"):
                    rows_pg = conn.execute(
                        "SELECT batch FROM onceflow_commits WHERE sink = %s AND job = %s ORDER BY batch", (name, job)
                    )
                    found[name] = [int(str(batch)) for (batch,) in rows_pg.fetchall()]
        return found

    def prepared(self) -> dict[str, list[str]]:
        """What each participant (each shard) still holds prepared: SQLite's prepared table, PostgreSQL's
        prepared transactions, the journal of prepared batches of the Kafka and lakehouse sinks."""
        import psycopg

        found: dict[str, list[str]] = {}
        if "sqlite" in self.sinks:
            with sqlite3.connect(self.sqlite_path) as db:
                for name in self.names_of("sqlite"):
                    rows = db.execute(
                        "SELECT job, batch FROM onceflow_pending WHERE sink = ? ORDER BY job, batch", (name,)
                    )
                    found[name] = [str(TransactionId(job, batch)) for job, batch in rows]
        if "postgres" in self.sinks:
            with psycopg.connect(self.postgres_dsn) as conn:
                gids = conn.execute("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
                held = sorted(str(gid) for (gid,) in gids.fetchall())
                for name in self.names_of("postgres"):
                    found[name] = [gid for gid in held if gid.startswith(gid_prefix(name))]
        for sink in ("kafka", *LAKEHOUSE_SINKS):
            for name in self.names_of(sink) if sink in self.sinks else ():
                journal = self._participant_dir(name) / "state" / name / "prepared"
                found[name] = sorted(str(TransactionId(p.parent.name, int(p.stem))) for p in journal.glob("*/*.json"))
        return found

    def names_of(self, sink: str) -> list[str]:
        """The participant names of ``sink``: the sink, or one ``<sink>#<index>`` per shard."""
        return [self.shard_of(sink, i).record_name(sink) for i in range(self.shards[sink])]
