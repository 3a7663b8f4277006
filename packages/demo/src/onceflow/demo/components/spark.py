"""The Spark job (``onceflow spark run --master local[2]``): the IP-count query with the 2PC sink.

Each micro-batch (one every ``trigger_ms``, the checkpoint interval) stages its rows under the
staging root and commits them through the coordinator to every participant's sink. The job's
progress listener feeds its Prometheus endpoint (batch id, duration, watermark), which the dashboard
reads.

Ready means working: the driver logged ``query.progress`` (a micro-batch of this instance
completed), or the query started ``IDLE_READY_S`` ago and has had nothing to do (a query with no new
data and no watermark to move runs no batch, so reports no progress). Starting the JVM, the session
and the Python workers and running the first batch takes 20-60 s on a busy 2-core machine.
"""

from __future__ import annotations

import time
from typing import Any

from onceflow.contract import DEAD_LETTERS_OUTPUT
from onceflow.core.topics import SOURCE_TOPIC
from onceflow.demo.components.base import HOST, Component, Context, onceflow_command
from onceflow.demo.components.participant import KAFKA_SINK, SQLITE_SINK, ParticipantComponent
from onceflow.demo.supervisor import ChildProcess
from onceflow.ipcount.schema import ENTRYPOINT, results_outputs

JOB = "ipcount"
MASTER = "local[2]"
STARTED_LINE = "query.started"
PROGRESS_LINE = "query.progress"
IDLE_READY_S = 45.0
#: The SQLite table of the job's dead letters (undecodable source records), committed with each batch.
DEAD_LETTER_TABLE = "ip_count_dead_letters"


def outputs(sinks: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The job's bindings: the IP-count results in every sink, its dead letters in SQLite.

    Every output of a micro-batch commits in its one transaction, the dead letters included
    (a job without bindings would publish them to the dead-letter topic at least once).
    """
    tables = [sink for sink in sinks if sink != KAFKA_SINK]
    return {
        **results_outputs(tables, [sink for sink in sinks if sink == KAFKA_SINK]),
        DEAD_LETTERS_OUTPUT: [{"sink": SQLITE_SINK, "table": DEAD_LETTER_TABLE, "mode": "append"}],
    }


class SparkComponent(Component):
    name = "spark"

    def settings(self) -> dict[str, Any]:
        context = self.context
        sinks = ParticipantComponent(context).sink_names()
        return {
            "job": JOB,
            "entrypoint": ENTRYPOINT,
            "guarantee": "exactly-once",
            "kafka": context.kafka_settings(self.name),
            "source": {"topic": SOURCE_TOPIC, "starting_offsets": "earliest"},
            "trigger_interval_ms": context.state.trigger_ms,
            "output_mode": "append",
            "checkpoint_location": str(context.run.data("spark") / "checkpoint"),
            "staging_root": str(context.staging_root),
            "coordinator": {"target": context.target("coordinator"), "register_timeout_ms": 120_000},
            "participants": [{"sink": sink, "target": context.target("participant")} for sink in sinks],
            "outputs": outputs(sinks),
            # The supervisor restarts the whole driver process as well; in-process restarts are quicker.
            "restart": {"attempts": 1000, "delay_ms": 2000},
            "spark": {"master": MASTER, "shuffle_partitions": 2},
            "metrics": {"host": HOST, "port": context.port("spark_metrics")},
            "log": self.logging_settings(),
        }

    def command(self) -> list[str]:
        return onceflow_command("spark", "run", "--config", str(self.config_path), "--master", MASTER)

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._started_seen: dict[int, float] = {}

    def probe(self, child: ChildProcess) -> bool:
        log = child.log_since_start()
        if PROGRESS_LINE in log:
            return True
        if STARTED_LINE not in log or child.pid is None:
            return False
        first_seen = self._started_seen.setdefault(child.pid, time.monotonic())
        return time.monotonic() - first_seen >= IDLE_READY_S
