"""Settings of ``onceflow spark run``: a TOML file plus ``ONCEFLOW_SPARK__*`` environment overrides.

See ``services/spark-worker/spark-worker.toml`` for every key with its default.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from onceflow.contract import MAX_SHARDS, ParticipantRef, SinkBinding
from onceflow.contract.staging import StagingStoreSettings
from onceflow.core import defaults
from onceflow.core.settings import KafkaSettings, MeteredSettings, Section, TlsSettings
from onceflow.core.settings.unique import check_unique
from onceflow.core.topics import DEAD_LETTER_TOPIC, SINK_TOPIC, SOURCE_TOPIC

JobName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._-]+$")]
Guarantee = Literal["exactly-once", "at-least-once"]
#: Who stages an exactly-once batch's rows: its write tasks, or the driver (``SparkJobSettings.stage_on``).
StageOn = Literal["tasks", "driver"]


class SourceSettings(Section):
    """The ``onceflow-kafka`` source of the job."""

    topic: str = SOURCE_TOPIC
    #: ``earliest``, ``latest`` or JSON ``{"topic": {"0": 42}}`` (-2 earliest, -1 latest).
    starting_offsets: str = "earliest"
    #: Admission control: at most this many offsets per micro-batch (0 = no limit).
    max_offsets_per_trigger: int = Field(default=0, ge=0)
    isolation_level: Literal["read_committed", "read_uncommitted"] = "read_committed"
    fail_on_data_loss: bool = True
    fetch_timeout_ms: int = Field(default=120_000, gt=0)


class JobParticipantSettings(Section):
    """One sink of the job and the ``onceflow participant`` server(s) hosting it: ``target``, or
    ``targets`` for a sink served by several participant processes (shards): shard ``i`` is the
    server at ``targets[i]``, each started with ``shard = i`` and ``shards = len(targets)``."""

    sink: str = Field(min_length=1, pattern=r"^[^#:]+$")
    target: str = ""
    targets: list[str] = Field(default_factory=list, max_length=MAX_SHARDS)

    @model_validator(mode="after")
    def _one_way_to_name_targets(self) -> JobParticipantSettings:
        if bool(self.target) == bool(self.targets):
            raise ValueError(f"sink {self.sink!r}: set target (one participant) or targets (its shards), not both")
        if any(not target for target in self.targets):
            raise ValueError(f"sink {self.sink!r}: targets must not be empty strings")
        repeated = sorted({t for t in self.targets if self.targets.count(t) > 1})
        if repeated:
            raise ValueError(f"sink {self.sink!r}: each shard needs a target of its own; repeated: {repeated[0]}")
        return self

    def refs(self, bindings: tuple[SinkBinding, ...] = ()) -> tuple[ParticipantRef, ...]:
        """The participant refs the coordinator registers for this sink: one, or one per shard."""
        return ParticipantRef.shards_of(self.sink, self.targets or [self.target], bindings)


class BindingSettings(Section):
    """One sink of an output: a participant's connection (``sink``) and the table or topic written there.

    ``mode`` is ``upsert`` (on ``keys``; update-mode results) or ``append`` (every row once, also
    without a key). Kafka topics take ``keys`` as the record key columns, ``value_format``
    (``avro`` single-object encoding, or ``json``), ``headers`` (columns sent as headers) and
    ``record_name`` (the Avro record's full name).
    """

    sink: str = Field(min_length=1)
    table: str = ""
    topic: str = ""
    mode: Literal["upsert", "append"] = "upsert"
    keys: list[str] = Field(default_factory=list)
    value_format: Literal["avro", "json"] = "avro"
    headers: list[str] = Field(default_factory=list)
    record_name: str = ""


class JobCoordinatorSettings(Section):
    """Where the transaction coordinator listens, and the deadline of one commit."""

    #: ``HOST:PORT``, or an active coordinator and its standbys: ``HOST:PORT,HOST:PORT`` (fail-over).
    target: str = "127.0.0.1:7100"
    tls: TlsSettings = TlsSettings()
    rpc_timeout_ms: int = Field(default=120_000, gt=0)
    #: How long the driver retries RegisterWriter/RegisterParticipants while the coordinator is down.
    register_timeout_ms: int = Field(default=60_000, gt=0)


class RestartSettings(Section):
    """Fixed-delay restart strategy (Flink's ``fixedDelayRestart(attempts, delay)``)."""

    attempts: int = Field(default=defaults.RESTART_ATTEMPTS, ge=0)
    delay_ms: int = Field(default=defaults.RESTART_DELAY_MS, ge=0)


class SparkSessionSettings(Section):
    """The Spark session: master, parallelism, and any other Spark configuration passed through."""

    master: str = "local[*]"
    #: Empty: ``onceflow-<job>``.
    app_name: str = ""
    #: Partitions of the windowed aggregation's state, fixed for the life of a checkpoint.
    shuffle_partitions: int = Field(default=2, ge=1)
    #: Name of the streaming query (unique among a session's active queries); empty = the job name.
    query_name: str = ""
    conf: dict[str, str] = Field(default_factory=dict)


class SparkJobSettings(MeteredSettings):
    """The whole configuration of a job: its code, its source, its outputs' sinks, the Spark session."""

    env_prefix: ClassVar[str] = "ONCEFLOW_SPARK__"

    job: JobName = "ipcount"
    #: The job's code: ``package.module:function`` or ``path/to/job.py:function`` (see docs/jobs.md);
    #: ``onceflow job run ENTRYPOINT`` sets it.
    entrypoint: str = Field(min_length=1)
    #: Free-form parameters the job reads from ``context.params``.
    params: dict[str, Any] = Field(default_factory=dict)
    #: The sinks of each output: ``[[outputs.<name>]]`` tables, required of an exactly-once job. Dead
    #: letters not bound (``[[outputs.dead_letters]]``) are produced to ``dead_letter_topic``.
    guarantee: Guarantee = "exactly-once"
    outputs: dict[str, list[BindingSettings]] = Field(default_factory=dict, validate_default=True)
    kafka: KafkaSettings = KafkaSettings()
    source: SourceSettings = SourceSettings()
    #: Micro-batch trigger = checkpoint interval.
    trigger_interval_ms: int = Field(default=defaults.CHECKPOINT_INTERVAL_MS, gt=0)
    output_mode: Literal["append", "update"] = "append"
    #: Spark's checkpoint: a local directory, or ``s3a://bucket/prefix`` (``s3://`` too) through
    #: Hadoop's S3A connector, pointed at the ``[staging.s3]`` store (docs/cluster.md).
    checkpoint_location: str = "./var/spark/checkpoints/ipcount"
    #: Where tasks stage each batch: a local directory or ``s3://bucket/prefix``; probed at start.
    staging_root: str = "./var/spark/staging"
    #: Who stages an exactly-once batch's rows: ``tasks`` (each write task stages its own rows, in a
    #: Python step after the query's last stage: any output size) or ``driver`` (the driver collects
    #: the batch's rows as Arrow and stages them itself, as ``foreachBatch``: no Python step in the
    #: tasks, about 0.1 s less a batch; for outputs of up to some MB a batch, such as windowed
    #: aggregates: ``spark.driver.maxResultSize`` bounds what a batch may collect).
    stage_on: StageOn = "tasks"
    #: How to reach the S3 API store (``[staging.s3]``; empty fields: the standard AWS variables).
    staging: StagingStoreSettings = StagingStoreSettings()
    #: A local ``checkpoint_location`` / ``staging_root`` is on a filesystem every node mounts at the
    #: same place (NFS, say). Without it a local path is refused on a multi-host master (docs/cluster.md).
    checkpoint_shared: bool = False
    staging_shared: bool = False
    dead_letter_topic: str = DEAD_LETTER_TOPIC
    coordinator: JobCoordinatorSettings = JobCoordinatorSettings()
    participants: list[JobParticipantSettings] = Field(default_factory=list)
    #: The topic the at-least-once baseline writes the job's output to directly (the Kafka sink's topic),
    #: as Avro single-object records keyed by ``sink_keys`` (none: no key) of the record ``sink_record_name``
    #: (empty: ``onceflow.<job>.<output>``), as a Kafka binding of the output would.
    sink_topic: str = SINK_TOPIC
    sink_keys: list[str] = Field(default_factory=list)
    sink_record_name: str = ""
    restart: RestartSettings = RestartSettings()
    spark: SparkSessionSettings = SparkSessionSettings()

    @field_validator("outputs")
    @classmethod
    def _check_outputs(
        cls, outputs: dict[str, list[BindingSettings]], info: ValidationInfo
    ) -> dict[str, list[BindingSettings]]:
        if info.data.get("guarantee") == "exactly-once" and not outputs:
            raise ValueError(
                "an exactly-once job declares where its outputs go: [[outputs.<name>]] tables, each with a sink "
                "and its table or topic (docs/jobs.md); none declared"
            )
        return outputs

    @field_validator("participants")
    @classmethod
    def _check_participants(
        cls, participants: list[JobParticipantSettings], info: ValidationInfo
    ) -> list[JobParticipantSettings]:
        names = [p.sink for p in participants]
        check_unique(names, "sink names must be unique")
        if info.data.get("guarantee") == "exactly-once" and not participants:
            raise ValueError("exactly-once needs at least one [[participants]] entry (sink and target)")
        known = set(names)
        for output, bindings in info.data.get("outputs", {}).items():
            if not bindings:
                raise ValueError(f"outputs.{output} lists no sinks")
            for binding in bindings:
                if binding.sink not in known:
                    raise ValueError(
                        f"outputs.{output}: sink {binding.sink!r} is not one of the [[participants]] "
                        f"({', '.join(sorted(known)) or 'none'})"
                    )
        return participants
