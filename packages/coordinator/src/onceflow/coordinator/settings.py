"""Settings of the coordinator service: a TOML file plus ``ONCEFLOW_COORDINATOR__*`` environment overrides.

See ``services/coordinator/coordinator.toml`` for every key with its default.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from onceflow.coordinator.engine.config import Backoff, EngineConfig
from onceflow.coordinator.log.kafka import DEFAULT_TRANSACTIONAL_ID
from onceflow.core.settings import (
    GrpcServerSettings,
    KafkaSettings,
    LoggingSettings,
    MetricsSettings,
    Section,
    Settings,
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
    replication_factor: int = Field(default=1, ge=1)
    #: Create (or initialise an empty) log topic at start. Only for disposable setups (tests, the
    #: demo): a lost log would then start over silently. Otherwise run ``onceflow txn init-log`` once.
    init_if_missing: bool = False
    #: Bound of one log operation (topic creation, init, one append, the replay).
    timeout_ms: int = Field(default=30_000, gt=0)
    #: Log PREPARING before sending Prepare (one more write per batch; makes attempts visible).
    log_preparing: bool = True
    #: Final transactions more than this many batches older than a job's newest commit are
    #: tombstoned (0 keeps everything).
    retain_batches: int = Field(default=1000, ge=0)


class CoordinatorSettings(Settings):
    """The whole configuration of ``onceflow coordinator``."""

    env_prefix: ClassVar[str] = "ONCEFLOW_COORDINATOR__"

    server: GrpcServerSettings = GrpcServerSettings(port=DEFAULT_PORT)
    #: TLS of the coordinator's calls to participants (``ca``; ``cert``/``key`` for mTLS).
    participant_tls: TlsSettings = TlsSettings()
    kafka: KafkaSettings = KafkaSettings()
    transaction_log: TransactionLogSettings = TransactionLogSettings()
    #: Root of the staged files (``<root>/<job>/<batch>/``), deleted after END. Empty: no GC.
    staging_root: str = ""
    prepare_timeout_ms: int = Field(default=10_000, gt=0)
    #: How long CommitTransaction waits for the commit acks before answering COMMITTING.
    commit_wait_ms: int = Field(default=30_000, ge=0)
    abort_timeout_ms: int = Field(default=5_000, gt=0)
    commit_retry: CommitRetrySettings = CommitRetrySettings()
    #: gRPC server threads (concurrent RPCs).
    max_workers: int = Field(default=32, ge=4)
    metrics: MetricsSettings = MetricsSettings()
    log: LoggingSettings = LoggingSettings()

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
            retain_batches=self.transaction_log.retain_batches,
        )
