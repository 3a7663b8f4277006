"""States and status snapshots of connectors and tasks, as the admin API reports them."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from onceflow.runtime.api.connector import ConnectorType


class WorkState(enum.Enum):
    """Where a connector or task is (Kafka Connect's states, plus KIP-875's STOPPED)."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    RESTARTING = "RESTARTING"


class TargetState(enum.Enum):
    """What an operator asked for; the herder drives tasks towards it."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class TaskId:
    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass
class ProducerProgress:
    """An exactly-once task's transactional producer: identity (from librdkafka statistics) and progress."""

    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    idempotence_state: str = ""
    transaction_state: str = ""
    transactions_committed: int = 0
    transactions_aborted: int = 0
    records_produced: int = 0
    records_in_transaction: int = 0


@dataclass
class TaskStatus:
    id: TaskId
    state: WorkState
    worker_id: str
    trace: str = ""
    producer: ProducerProgress = field(default_factory=ProducerProgress)

    def to_json(self) -> dict[str, Any]:
        return {
            "connector": self.id.connector,
            "task": self.id.task,
            "state": self.state.value,
            "worker_id": self.worker_id,
            "trace": self.trace,
            "producer": asdict(self.producer),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TaskStatus:
        return cls(
            TaskId(str(doc["connector"]), int(doc["task"])),
            WorkState(doc["state"]),
            str(doc.get("worker_id", "")),
            str(doc.get("trace", "")),
            ProducerProgress(**doc.get("producer", {})),
        )


@dataclass
class ConnectorStatus:
    name: str
    state: WorkState
    worker_id: str
    type: ConnectorType
    trace: str = ""
    tasks: list[TaskStatus] = field(default_factory=list)
