"""The options of one ``onceflow demo`` invocation, and how a new run's state is derived from them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from onceflow.core import defaults
from onceflow.demo.run_dir import RunState

#: About two minutes on a 2-core machine: ~25 s start-up, 90 s of traffic at 1,000 events/s, the drain.
DEFAULT_EVENTS = 90_000
DEFAULT_RATE = 1_000.0
DEFAULT_SEED = 7


@dataclass(frozen=True)
class DemoOptions:
    run_dir: Path | None = None
    resume: bool = False
    events: int = DEFAULT_EVENTS
    #: Generator events per second; None: :data:`DEFAULT_RATE` for a new run, the stored pace on ``--resume``.
    rate: float | None = None
    seed: int = DEFAULT_SEED
    trigger_ms: int = defaults.CHECKPOINT_INTERVAL_MS
    source_partitions: int = 2
    chaos: bool = False
    #: Start the input (the connect worker) once the Spark job serves, not while it warms up; always
    #: so with ``chaos``. Measures a running pipeline's throughput, without the job's start-up.
    input_after_job: bool = False
    chaos_interval_s: float = 8.0
    chaos_seed: int | None = None
    #: Start a local PostgreSQL server for the PostgreSQL sink, or use this DSN ("" = no PostgreSQL sink).
    postgres: bool = False
    postgres_dsn: str = ""
    #: Add a Delta Lake table (``ip_counts`` under ``data/participant/lake``) to the sinks and the audit.
    lakehouse: bool = False
    restart_delay_s: float = 1.0
    #: Give up waiting for the run to complete after this long (then audit anyway); None = no limit.
    timeout_s: float | None = None
    #: None: a rich dashboard on a terminal, plain progress lines otherwise.
    plain: bool | None = None
    progress_interval_s: float = 5.0
    #: ``--input``: an access-log file to run over instead of the generator; ``--follow`` tails it
    #: through rotation, ending after ``idle_timeout_s`` without a new line (None: until Ctrl-C).
    input_path: Path | None = None
    #: An existing Kafka instead of the embedded broker, and librdkafka properties for every client.
    bootstrap_servers: str = ""
    kafka_properties: dict[str, str] = field(default_factory=dict)
    #: librdkafka properties of one service (``--service-property SERVICE:KEY=VALUE``), over those.
    service_kafka_properties: dict[str, dict[str, str]] = field(default_factory=dict)
    follow: bool = False
    idle_timeout_s: float | None = None
    service_log_level: str = "INFO"

    def new_state(self, run_id: str) -> RunState:
        """The state of a fresh run: event time starts now (results are live), at the event rate."""
        now_ms = int(time.time() * 1000)
        rate = DEFAULT_RATE if self.rate is None else self.rate
        event_rate = max(1, int(rate)) if rate > 0 else 1000
        if self.postgres_dsn:
            postgres = "dsn"
        elif self.postgres:
            postgres = "local"
        else:
            postgres = "off"
        return RunState(
            run_id=run_id,
            seed=self.seed,
            events=self.events,
            rate=rate,
            event_time_start_ms=now_ms - now_ms % defaults.WINDOW_MS,
            event_time_rate=event_rate,
            trigger_ms=self.trigger_ms,
            source_partitions=self.source_partitions,
            postgres=postgres,
            postgres_dsn=self.postgres_dsn,
            lakehouse=self.lakehouse,
            input_path=str(self.input_path.resolve()) if self.input_path is not None else "",
            bootstrap_servers=self.bootstrap_servers,
            kafka_properties=dict(self.kafka_properties),
            service_kafka_properties={k: dict(v) for k, v in self.service_kafka_properties.items()},
            follow=self.follow,
            idle_end_ms=int(self.idle_timeout_s * 1000) if self.idle_timeout_s else 0,
        )
