"""Settings of the participant server: where it listens, the coordinator, and the sinks it hosts."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from onceflow.contract.shards import MAX_SHARDS, Shard
from onceflow.contract.staging import StagingStoreSettings
from onceflow.core import defaults
from onceflow.core.settings import (
    GrpcServerSettings,
    KafkaSettings,
    MeteredSettings,
    Section,
    TlsSettings,
    check_unique,
)
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC
from onceflow.sinks.delta.settings import DeltaOptions
from onceflow.sinks.iceberg.settings import IcebergOptions

#: The staging root of the shipped service configs (services/coordinator, services/spark-worker).
DEFAULT_STAGING_ROOT = "./data/staging"

SinkName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


class CoordinatorClientSettings(Section):
    """How to reach the transaction coordinator (to learn the outcome of in-doubt transactions)."""

    #: ``HOST:PORT``, or an active coordinator and its standbys: ``HOST:PORT,HOST:PORT`` (fail-over).
    target: str = ""
    tls: TlsSettings = TlsSettings()
    #: Deadline of one GetTransaction call.
    rpc_timeout_s: float = Field(default=5.0, gt=0)
    #: Retry backoff while the coordinator is unreachable or still undecided: doubles up to the max.
    initial_backoff_s: float = Field(default=0.2, gt=0)
    max_backoff_s: float = Field(default=5.0, gt=0)


class SqliteOptions(Section):
    """``path`` of the database file (created if missing)."""

    path: str = Field(min_length=1)
    busy_timeout_ms: int = Field(default=10_000, ge=0)


class PostgresOptions(Section):
    """``dsn`` is a libpq connection string or URI; the server needs max_prepared_transactions > 0."""

    dsn: str = Field(min_length=1)
    lock_timeout_ms: int = Field(default=10_000, gt=0)
    connect_timeout_s: int = Field(default=10, gt=0)


class KafkaOptions(Section):
    """Where the Kafka sink writes, and where it keeps its small prepared-transaction journal."""

    kafka: KafkaSettings = KafkaSettings()
    #: A topic created at start, for readers that subscribe before the first batch (the jobs' bindings
    #: say what is written where; a participant has no bindings of its own).
    topic: str = SINK_TOPIC
    commits_topic: str = SINK_COMMITS_TOPIC
    state_dir: str = Field(min_length=1)
    transaction_timeout_ms: int = Field(default=defaults.KAFKA_TRANSACTION_TIMEOUT_MS, gt=0)


class SinkSection(Section):
    """What every ``[[sinks]]`` entry has: its ``name`` and, for a sink served by several participant
    processes, which shard of it this process serves (``shard`` of ``shards``; the default 0 of 1 is
    the whole sink). Every shard of a sink runs with the same ``shards`` and its own ``shard``."""

    name: SinkName
    shard: int = Field(default=0, ge=0)
    shards: int = Field(default=1, ge=1, le=MAX_SHARDS)

    @model_validator(mode="after")
    def _shard_in_range(self) -> SinkSection:
        if self.shard >= self.shards:
            raise ValueError(f"shard {self.shard} is not below shards = {self.shards} (sink {self.name!r})")
        return self

    @property
    def shard_spec(self) -> Shard:
        return Shard(self.shard, self.shards)


class SqliteSink(SinkSection):
    kind: Literal["sqlite"]
    options: SqliteOptions


class PostgresSink(SinkSection):
    kind: Literal["postgres"]
    options: PostgresOptions


class KafkaSink(SinkSection):
    kind: Literal["kafka"]
    options: KafkaOptions


class DeltaSink(SinkSection):
    kind: Literal["delta"]
    options: DeltaOptions


class IcebergSink(SinkSection):
    kind: Literal["iceberg"]
    options: IcebergOptions


class StagingSettings(StagingStoreSettings):
    """Where staged files may be read from: nothing outside these roots and schemes is ever opened.

    ``roots`` are local directories (paths or ``file://`` URIs) or ``s3://bucket/prefix`` (then
    ``allowed_schemes`` must list ``s3``); the default is the shipped default staging root (the
    coordinator's and the Spark worker's ``staging_root``). Symlinks and ``..`` are resolved before
    the check. ``s3`` says how to reach the S3 API store (``[staging.s3]``, else the standard AWS
    environment variables). Every root is probed at start (write, read, delete).
    """

    roots: list[str] = Field(default_factory=lambda: [DEFAULT_STAGING_ROOT], min_length=1)
    allowed_schemes: list[str] = Field(default_factory=lambda: ["file"], min_length=1)


SinkSettings = Annotated[SqliteSink | PostgresSink | KafkaSink | DeltaSink | IcebergSink, Field(discriminator="kind")]


class ParticipantSettings(MeteredSettings):
    """``onceflow participant``: a gRPC Participant server hosting one or more named sinks."""

    env_prefix: ClassVar[str] = "ONCEFLOW_PARTICIPANT__"

    server: GrpcServerSettings = GrpcServerSettings(port=7101)
    coordinator: CoordinatorClientSettings = CoordinatorClientSettings()
    sinks: list[SinkSettings] = Field(min_length=1)
    staging: StagingSettings = StagingSettings()

    @field_validator("sinks")
    @classmethod
    def _unique_names(cls, sinks: list[SinkSettings]) -> list[SinkSettings]:
        check_unique((sink.name for sink in sinks), "sink names must be unique")
        return sinks
