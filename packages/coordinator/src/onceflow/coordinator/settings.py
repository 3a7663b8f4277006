"""Settings of the coordinator service: a TOML file plus ``ONCEFLOW_COORDINATOR__*`` environment overrides.

See ``services/coordinator/coordinator.toml`` for every key with its default.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from onceflow.contract.staging import StagingStoreSettings
from onceflow.coordinator.engine.config import Backoff, EngineConfig
from onceflow.coordinator.log.kafka import DEFAULT_TRANSACTIONAL_ID
from onceflow.core.settings import (
    GrpcServerSettings,
    KafkaSettings,
    MeteredSettings,
    Section,
    TlsSettings,
)
from onceflow.core.topics import COORDINATOR_LOG_TOPIC

DEFAULT_PORT = 7100


class CommitRetrySettings(Section):
    """How Commit is re-sent to a participant that did not ack: exponential backoff, forever."""

    initial_backoff_ms: int = Field(default=100, gt=0)
    max_backoff_ms: int = Field(default=10_000, gt=0)
    multiplier: float = Field(default=2.0, ge=1.0)
    #: Deadline of one Commit call.
    call_timeout_ms: int = Field(default=5_000, gt=0)

    @model_validator(mode="after")
    def _check_order(self) -> CommitRetrySettings:
        if self.max_backoff_ms < self.initial_backoff_ms:
            raise ValueError(
                f"max_backoff_ms ({self.max_backoff_ms}) must be >= initial_backoff_ms ({self.initial_backoff_ms})"
            )
        return self


class TransactionLogSettings(Section):
    """Where decisions are logged: ``kafka`` (durable, fences zombies) or ``memory`` (tests, demos)."""

    backend: Literal["kafka", "memory"] = "kafka"
    topic: str = COORDINATOR_LOG_TOPIC
    #: Fixed on purpose: a new coordinator instance with the same id fences the previous one.
    transactional_id: str = DEFAULT_TRANSACTIONAL_ID
    #: Replication factor of the log topic when it is created (``onceflow txn init-log``,
    #: ``init_if_missing``); unset: ``kafka.replication_factor`` (default min(3, brokers in the cluster)).
    replication_factor: int | None = Field(default=None, ge=1)
    #: Create (or initialise an empty) log topic at start. Only for disposable setups (tests, the
    #: demo): a lost log would then start over silently. Otherwise run ``onceflow txn init-log`` once.
    init_if_missing: bool = False
    #: Bound of one log operation (topic creation, init, one append, the replay).
    timeout_ms: int = Field(default=30_000, gt=0)
    #: Log PREPARING before sending Prepare (one more write per batch; makes attempts visible).
    log_preparing: bool = True
    #: How long a transaction's COMMITTED record (bookkeeping: every sink has committed) waits to be
    #: written in the same Kafka transaction as the next append, before it is written alone.
    end_linger_ms: int = Field(default=50, ge=0, le=10_000)
    #: Final transactions more than this many batches older than a job's newest commit are
    #: tombstoned (0 keeps everything).
    retain_batches: int = Field(default=1000, ge=0)


class StandbySettings(Section):
    """Several coordinators, one active: they are members of the consumer group ``group_id`` on the
    one-partition log topic, and the owner of its partition is the active one (Kafka Connect's
    distributed herder elects its leader the same way). The others are hot standbys: a standby
    takes over when the active one leaves the group or misses ``session_timeout_ms`` of heartbeats,
    and its ``init_transactions`` on the log fences the old one. Run every instance with it enabled.
    """

    enabled: bool = False
    group_id: str = Field(default="onceflow-coordinator", min_length=1, max_length=255)
    #: How long an active coordinator may be silent before a standby takes over (Kafka's
    #: ``session.timeout.ms``; the broker's group.min/max.session.timeout.ms bound it).
    session_timeout_ms: int = Field(default=10_000, ge=1_000, le=300_000)
    #: The address clients reach this instance at, named by the standbys' UNAVAILABLE answers.
    #: Empty: ``server.host:<bound port>``.
    advertised_target: str = Field(default="", max_length=255)


class CoordinatorSettings(MeteredSettings):
    """The whole configuration of ``onceflow coordinator``."""

    env_prefix: ClassVar[str] = "ONCEFLOW_COORDINATOR__"

    server: GrpcServerSettings = GrpcServerSettings(port=DEFAULT_PORT)
    #: TLS of the coordinator's calls to participants (``ca``; ``cert``/``key`` for mTLS).
    participant_tls: TlsSettings = TlsSettings()
    kafka: KafkaSettings = KafkaSettings()
    transaction_log: TransactionLogSettings = TransactionLogSettings()
    standby: StandbySettings = StandbySettings()
    #: Root of the staged files (``<root>/<job>/<batch>/``), deleted after END. Empty: no GC.
    #: A local directory or ``s3://bucket/prefix``; probed at start (write, read, delete).
    staging_root: str = ""
    #: How to reach the store of an ``s3://`` staging root (``[staging.s3]``; else the AWS variables).
    staging: StagingStoreSettings = StagingStoreSettings()
    prepare_timeout_ms: int = Field(default=10_000, gt=0)
    #: How long CommitTransaction waits for the commit acks before answering COMMITTING.
    commit_wait_ms: int = Field(default=30_000, ge=0)
    abort_timeout_ms: int = Field(default=5_000, gt=0)
    commit_retry: CommitRetrySettings = CommitRetrySettings()
    #: gRPC server threads (concurrent RPCs).
    max_workers: int = Field(default=32, ge=4)

    @model_validator(mode="after")
    def _standby_needs_kafka(self) -> CoordinatorSettings:
        if self.standby.enabled and self.transaction_log.backend != "kafka":
            raise ValueError("standby.enabled needs transaction_log.backend = kafka: the log's transactional id fences")
        return self

    def engine_config(self) -> EngineConfig:
        """The engine's timing and retention, in seconds."""
        retry = self.commit_retry
        return EngineConfig(
            prepare_timeout=self.prepare_timeout_ms / 1000,
            commit_wait=self.commit_wait_ms / 1000,
            commit_call_timeout=retry.call_timeout_ms / 1000,
            commit_backoff=Backoff(retry.initial_backoff_ms / 1000, retry.max_backoff_ms / 1000, retry.multiplier),
            abort_timeout=self.abort_timeout_ms / 1000,
            log_preparing=self.transaction_log.log_preparing,
            end_linger=self.transaction_log.end_linger_ms / 1000,
            retain_batches=self.transaction_log.retain_batches,
        )
