"""What a connect worker's admin API (``onceflow.v1.Connect``) answers, as Kafka Connect's REST API
entities: a connector's info and state, its tasks, its source offsets, the plugins, a config's
validation. States are Connect's names (``RUNNING``, ``PAUSED``, ``FAILED``, ``STOPPED``,
``UNASSIGNED``, ``RESTARTING``) and types ``source`` or ``sink``, as the REST API spells them.

:class:`onceflow.contract.clients.ConnectClient` answers these; the conversions from and to the
messages live in :mod:`onceflow.contract.proto`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ConnectorInfo:
    """A connector's name, config, task ids and type (``source`` or ``sink``)."""

    name: str
    config: Mapping[str, str]
    tasks: tuple[int, ...]
    type: str


@dataclass(frozen=True)
class TaskStateInfo:
    """One task's state on its worker, with its exactly-once producer's progress (a source task)."""

    id: int
    state: str
    worker_id: str
    trace: str = ""
    transactional_id: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    transactions_committed: int = 0
    records_produced: int = 0


@dataclass(frozen=True)
class ConnectorStateInfo:
    """A connector's state and its tasks' (``GET /connectors/{name}/status``)."""

    name: str
    state: str
    worker_id: str
    type: str
    trace: str = ""
    tasks: tuple[TaskStateInfo, ...] = ()


@dataclass(frozen=True)
class ConnectorListing:
    """The connectors' names, with their states and infos when asked (``?expand=status&expand=info``)."""

    names: tuple[str, ...]
    statuses: tuple[ConnectorStateInfo, ...] = ()
    infos: tuple[ConnectorInfo, ...] = ()


@dataclass(frozen=True)
class ConfigUpdate:
    """What ``PUT /connectors/{name}/config`` answers: the connector, and whether it is new."""

    connector: ConnectorInfo
    created: bool


@dataclass(frozen=True)
class TaskInfo:
    """One task's config."""

    id: int
    config: Mapping[str, str]


@dataclass(frozen=True)
class ConnectorOffset:
    """A source partition and its offset (JSON objects, as Kafka Connect's); ``offset`` None resets it."""

    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PluginInfo:
    """An installed connector plugin."""

    name: str
    type: str
    version: str
    entry_point: str


@dataclass(frozen=True)
class ConfigValidation:
    """One setting of a validated config: its value and what is wrong with it (nothing: valid)."""

    name: str
    value: str
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigValidationResult:
    """A config validated against a plugin (``PUT /connector-plugins/{plugin}/config/validate``)."""

    error_count: int
    configs: tuple[ConfigValidation, ...] = field(default=())
