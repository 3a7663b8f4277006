"""Settings of ``onceflow consumer`` (TOML file + ``ONCEFLOW_CONSUMER__*`` environment variables)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal

from pydantic import Field, field_validator, model_validator

from onceflow.consumer.tables.columns import parse_columns
from onceflow.contract.reserved import CONSUMER_BOOKKEEPING_TABLES
from onceflow.core import defaults
from onceflow.core.settings import (
    GrpcServerSettings,
    KafkaSettings,
    MeteredSettings,
    Section,
    check_unique,
)
from onceflow.core.topics import SINK_TOPIC

SinkName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]


class StoreSettings(Section):
    """Where results and offsets live: ``sqlite`` (``path``, the default) or ``postgres`` (``dsn``)."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    path: str = "./data/consumer/results.db"
    dsn: str = ""
    busy_timeout_ms: int = Field(default=10_000, ge=0)
    connect_timeout_s: int = Field(default=10, gt=0)

    @model_validator(mode="after")
    def _check_location(self) -> StoreSettings:
        if self.backend == "postgres" and not self.dsn:
            raise ValueError("store.dsn is required when store.backend = 'postgres'")
        if self.backend == "sqlite" and not self.path:
            raise ValueError("store.path is required when store.backend = 'sqlite'")
        return self


class ConsumerLoopSettings(Section):
    """The consumer-group member reading the stored topics with read_committed."""

    #: The IP-count job's results topic, stored in the table ``results`` (by the example's extension,
    #: whose IpCounts service serves GetIpCounts, GetTopIps and WatchResults over it). Empty: the
    #: consumer stores only the ``[[tables]]`` topics.
    topic: str = Field(default=SINK_TOPIC, pattern=r"^[A-Za-z0-9._-]{0,249}$")
    #: Instances with the same group split the topic's partitions.
    group_id: str = Field(default="onceflow-results", min_length=1)
    #: Static membership (KIP-345): a restarted instance with the same id takes its partitions back at
    #: once, without waiting for the session timeout. Empty: dynamic membership (a stopped instance
    #: leaves the group and its partitions move at once).
    group_instance_id: str = ""
    #: A batch is applied when it holds this many records, or ``max_batch_ms`` after its first record.
    max_batch_records: int = Field(default=5_000, ge=1)
    max_batch_ms: int = Field(default=200, ge=0)
    poll_timeout_ms: int = Field(default=100, ge=1)
    #: Also commit the applied offsets to the Kafka group after each database commit, for lag
    #: monitoring only: the database is the truth.
    commit_group_offsets: bool = True
    #: A record of ``topic`` that is not an IpCount: false stops the consumer (fail-stop), true logs,
    #: counts and skips it. (``[[tables]]`` have their own ``skip_undecodable``, true by default.)
    skip_undecodable: bool = False


class StoredTableSettings(Section):
    """One ``[[tables]]`` entry: a topic written by onceflow's Kafka sink, stored into one table of the store.

    Each record becomes one row, committed with the consumed offsets in one database transaction.
    ``avro`` records carry their writer schema's fingerprint (resolved in the schemas topic) and the
    table is created from that schema; ``json`` records need ``columns`` (name -> type: ``string``,
    ``byte``, ``short``, ``int``, ``long``, ``float``, ``double``, ``boolean``, ``binary``, ``date``,
    ``timestamp``, ``timestamp_ntz``, ``decimal(p,s)``, each optionally followed by ``not null``).
    """

    topic: str = Field(pattern=r"^[A-Za-z0-9._-]{1,249}$")
    table: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
    mode: Literal["upsert", "append"] = "append"
    #: upsert: the key columns (the table's primary key); append: none.
    keys: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")]] = Field(default_factory=list)
    value_format: Literal["avro", "json"] = "avro"
    #: The table's columns (required for json; for avro the table is created from them at start).
    columns: dict[str, str] = Field(default_factory=dict)
    #: A record that cannot be decoded or does not fit the table: true logs, counts and skips it;
    #: false stops the consumer.
    skip_undecodable: bool = True

    @model_validator(mode="after")
    def _check(self) -> StoredTableSettings:
        where = f"table {self.table!r}"
        if self.mode == "upsert" and not self.keys:
            raise ValueError(f"{where}: mode 'upsert' needs keys (the key columns)")
        if self.mode == "append" and self.keys:
            raise ValueError(f"{where}: keys are for mode 'upsert'; an append table takes every record")
        if self.value_format == "json" and not self.columns:
            raise ValueError(f"{where}: value_format 'json' needs columns (a JSON record carries no schema)")
        parse_columns(self.table, self.columns)
        missing = [key for key in self.keys if self.columns and key not in self.columns]
        if missing:
            raise ValueError(f"{where}: key column(s) {', '.join(missing)} are not in columns")
        return self


class ApiSettings(Section):
    """The Results gRPC API."""

    #: A window is closed once the newest window start seen is at least window_end + this (GetTopIps 0).
    allowed_lateness_ms: int = Field(default=defaults.ALLOWED_LATENESS_MS, ge=0)
    #: Batches buffered per WatchResults stream; a slower watcher is ended with RESOURCE_EXHAUSTED.
    watch_queue_batches: int = Field(default=1_000, ge=1)
    #: Threads of the gRPC server: half for streams at most (server.limits), audits and the other calls.
    max_workers: int = Field(default=16, ge=4)


class AuditSinkSettings(Section):
    """One sink the audit compares with the truth: a Kafka topic or a result table (``delta``: the
    table ``table`` under the Delta sink's ``path``, its root)."""

    name: SinkName
    kind: Literal["kafka", "sqlite", "postgres", "delta"]
    topic: str = SINK_TOPIC
    path: str = ""
    dsn: str = ""
    table: str = Field(default="ip_counts", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @model_validator(mode="after")
    def _check_location(self) -> AuditSinkSettings:
        if self.kind == "sqlite" and not self.path:
            raise ValueError(f"sink {self.name!r}: path is required for kind 'sqlite'")
        if self.kind == "postgres" and not self.dsn:
            raise ValueError(f"sink {self.name!r}: dsn is required for kind 'postgres'")
        if self.kind == "delta" and not self.path:
            raise ValueError(f"sink {self.name!r}: path (the Delta sink's root) is required for kind 'delta'")
        return self


class AuditSettings(Section):
    """What RunAudit (and ``onceflow audit --config``) compares."""

    window_ms: int = Field(default=defaults.WINDOW_MS, ge=1)
    allowed_lateness_ms: int = Field(default=defaults.ALLOWED_LATENESS_MS, ge=0)
    #: Differences listed per sink.
    examples: int = Field(default=5, ge=0)
    read_timeout_s: float = Field(default=120.0, gt=0)
    #: The generator's settings for generator truth, as in its connector config (ips, max.disorder.ms, ...).
    generator: dict[str, str] = Field(default_factory=dict)
    #: RunAudit bounds: the largest generator truth (its memory and time grow with the count), and
    #: how long one audit may run (the call's own deadline applies too).
    max_generator_events: int = Field(default=10_000_000, ge=1)
    max_duration_s: float = Field(default=600.0, gt=0)
    #: Audits that may run at once (each holds a child process and its memory); more are refused
    #: with RESOURCE_EXHAUSTED.
    max_concurrent: int = Field(default=2, ge=1)
    #: Also audit the consumer's own store, as sink ``consumer``.
    include_store: bool = True
    sinks: list[AuditSinkSettings] = Field(default_factory=list)

    @field_validator("sinks")
    @classmethod
    def _unique_names(cls, sinks: list[AuditSinkSettings]) -> list[AuditSinkSettings]:
        check_unique((sink.name for sink in sinks), "sink names must be unique")
        return sinks


#: Tables of the store itself; a ``[[tables]]`` entry cannot use these names (nor may a sink binding
#: write the bookkeeping ones: :mod:`onceflow.contract.reserved`).
RESERVED_TABLES: Final = ("results", *CONSUMER_BOOKKEEPING_TABLES)


class ConsumerSettings(MeteredSettings):
    """``onceflow consumer``: the results consumer, its store and the Results API."""

    env_prefix: ClassVar[str] = "ONCEFLOW_CONSUMER__"

    kafka: KafkaSettings = KafkaSettings()
    consumer: ConsumerLoopSettings = ConsumerLoopSettings()
    store: StoreSettings = StoreSettings()
    server: GrpcServerSettings = GrpcServerSettings(port=7200)
    api: ApiSettings = ApiSettings()
    audit: AuditSettings = AuditSettings()
    #: Topics stored into tables besides the IP-count results (``consumer.topic`` -> ``results``).
    tables: list[StoredTableSettings] = Field(default_factory=list)

    @field_validator("tables")
    @classmethod
    def _distinct_tables(cls, tables: list[StoredTableSettings]) -> list[StoredTableSettings]:
        check_unique((t.table for t in tables), "each table is stored once")
        check_unique((t.topic for t in tables), "each topic is stored once")
        reserved = sorted({t.table for t in tables} & set(RESERVED_TABLES))
        if reserved:
            raise ValueError(f"table name(s) {', '.join(reserved)} are the store's own (reserved: {RESERVED_TABLES})")
        return tables

    @model_validator(mode="after")
    def _ip_count_topic_once(self) -> ConsumerSettings:
        if not self.consumer.topic and not self.tables:
            raise ValueError("nothing to consume: consumer.topic is empty and there are no [[tables]]")
        if self.consumer.topic and any(t.topic == self.consumer.topic for t in self.tables):
            raise ValueError(
                f"tables: topic {self.consumer.topic!r} is consumer.topic (the IP-count results, stored in "
                "'results'); a topic is stored once"
            )
        return self
