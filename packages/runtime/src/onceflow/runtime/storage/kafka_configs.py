"""Connector configs in the compacted configs topic (one partition, so every worker sees one order).

Records (keys are UTF-8, values JSON; a null value deletes):

- ``connector-<name>``: ``{"config": {...}, "tasks": [{...}, ...]}``, connector and task configs in
  one record, so a worker never sees a connector with half of its tasks;
- ``target-state-<name>``: ``{"state": "STARTED" | "PAUSED" | "STOPPED"}``;
- ``restart-<name>``: a :class:`RestartRequest`. Restarts are delivered only once the initial read
  is done, so a worker that starts later does not replay old restarts.

A record that cannot be decoded into one of these (not UTF-8, not JSON, fields missing or of the
wrong type, an unknown target state) is skipped and reported (:func:`skip_record`: a
``storage.record_skipped`` line naming the key and the reason, and ``on_skipped``, which the worker
counts in ``onceflow_connect_internal_records_skipped_total``). It never stops the config reader, so
one bad record can neither keep a worker from starting nor stop it from following the topic.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from onceflow.core.errors import InvalidConfig
from onceflow.core.kafka import DEFAULT_REPLICATION, Replication, kafka_error
from onceflow.core.logging import get_logger
from onceflow.runtime.status import TargetState
from onceflow.runtime.storage.configs import ClusterConfig, ConfigBackingStore, ConnectorEntry
from onceflow.runtime.storage.kafka_log import KafkaBasedLog, SkippedRecordListener, skip_record
from onceflow.runtime.storage.restarts import RestartRequest

_log = get_logger(__name__)
CONNECTOR_PREFIX = "connector-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-"


class UndecodableRecord(ValueError):  # noqa: N818 - reads as what the record is
    """A configs-topic record that is not one of the documented ones; the message says why."""


def _string_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UndecodableRecord(f"{what} must be an object of strings")
    return value


def _decode(key: bytes, value: bytes | None) -> tuple[str, Any]:
    """The record's name and its checked document (None for a tombstone); :class:`UndecodableRecord` otherwise."""
    try:
        name = key.decode()
        doc: Any = None if value is None else json.loads(value)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise UndecodableRecord(f"{type(exc).__name__}: {exc}") from None
    if doc is None:
        return name, None
    if not isinstance(doc, dict):
        raise UndecodableRecord(f"the value must be a JSON object, got {type(doc).__name__}")
    if name.startswith(CONNECTOR_PREFIX):
        tasks = doc.get("tasks")
        if not isinstance(tasks, list):
            raise UndecodableRecord("a connector record needs 'tasks', a list of task configs")
        return name, (_string_map(doc.get("config"), "'config'"), [_string_map(t, "a task config") for t in tasks])
    if name.startswith(TARGET_STATE_PREFIX):
        try:
            return name, TargetState(doc.get("state"))
        except ValueError:
            raise UndecodableRecord(f"unknown target state {doc.get('state')!r}") from None
    if name.startswith(RESTART_PREFIX):
        return name, _restart_request(doc)
    return name, doc


#: The JSON types of a restart request's fields (``task`` may also be null).
_RESTART_FIELDS: dict[str, type | tuple[type, ...]] = {
    "connector": str, "include_tasks": bool, "only_failed": bool, "task": (int, type(None)), "id": str,
}  # fmt: skip


def _restart_request(doc: dict[str, Any]) -> RestartRequest:
    unknown = sorted(set(doc) - set(_RESTART_FIELDS))
    wrong = sorted(
        name for name, kind in _RESTART_FIELDS.items()
        if name in doc and (not isinstance(doc[name], kind) or (name == "task" and isinstance(doc[name], bool)))
    )  # fmt: skip
    problems = [f"unknown fields {unknown}"] if unknown else []
    problems += [f"fields of the wrong type {wrong}"] if wrong else []
    problems += [] if "connector" in doc else ["no connector"]
    if problems:
        raise UndecodableRecord(f"not a restart request: {'; '.join(problems)}")
    return RestartRequest(**doc)


class KafkaConfigBackingStore(ConfigBackingStore):
    """Configs in the configs topic (module docstring); ``on_skipped`` hears of every record that
    could not be decoded."""

    def __init__(
        self,
        client_config: Mapping[str, Any],
        topic: str,
        *,
        on_skipped: SkippedRecordListener | None = None,
        replication: Replication = DEFAULT_REPLICATION,
    ) -> None:
        super().__init__()
        self.topic = topic
        self._on_skipped = on_skipped
        self._lock = threading.Lock()
        self._configs: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {}
        self._states: dict[str, TargetState] = {}
        self._started = False
        self._log = KafkaBasedLog(client_config, topic, self._handle, partitions=1, replication=replication)

    def start(self) -> None:
        self._log.start()
        self._started = True

    def stop(self) -> None:
        self._log.stop()

    def refresh(self) -> None:
        self._log.read_to_end()

    def _handle(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            return
        try:
            name, doc = _decode(key, value)
        except UndecodableRecord as exc:
            skip_record(self.topic, key, str(exc), self._on_skipped)
            return
        with self._lock:
            if name.startswith(CONNECTOR_PREFIX):
                connector = name[len(CONNECTOR_PREFIX) :]
                if doc is None:
                    self._configs.pop(connector, None)
                else:
                    self._configs[connector] = doc
            elif name.startswith(TARGET_STATE_PREFIX):
                connector = name[len(TARGET_STATE_PREFIX) :]
                if doc is None:
                    self._states.pop(connector, None)
                else:
                    self._states[connector] = doc
            elif not name.startswith(RESTART_PREFIX):
                _log.warning("configs.unknown_record", key=name)
        if name.startswith(RESTART_PREFIX):
            if doc is not None and self._started:
                self._on_restart(doc)
            return
        self._on_change()

    def snapshot(self) -> ClusterConfig:
        with self._lock:
            return ClusterConfig(
                {
                    name: ConnectorEntry(name, config, tasks, self._states.get(name, TargetState.STARTED))
                    for name, (config, tasks) in self._configs.items()
                }
            )

    def put_connector(self, entry: ConnectorEntry) -> None:
        with self._lock:
            exists = entry.name in self._configs
        if not exists:
            self._send(TARGET_STATE_PREFIX + entry.name, {"state": entry.target_state.value})
        self._send(CONNECTOR_PREFIX + entry.name, {"config": dict(entry.config), "tasks": entry.task_configs})
        self.refresh()

    def remove_connector(self, name: str) -> None:
        self._send(CONNECTOR_PREFIX + name, None)
        self._send(TARGET_STATE_PREFIX + name, None)
        self.refresh()

    def put_target_state(self, name: str, state: TargetState) -> None:
        self._send(TARGET_STATE_PREFIX + name, {"state": state.value})
        self.refresh()

    def request_restart(self, request: RestartRequest) -> None:
        self._send(RESTART_PREFIX + request.connector, asdict(request))

    def _send(self, key: str, doc: Any) -> None:
        """Write one record; a record larger than the topic (or the client) takes is the request's
        fault: :class:`InvalidConfig` naming its size and the topic, not an outage."""
        value = None if doc is None else json.dumps(doc).encode()
        try:
            self._log.send(key.encode(), value)
        except KafkaException as exc:
            error = kafka_error(exc)
            if error is None or error.code() != KafkaError.MSG_SIZE_TOO_LARGE:
                raise
            size = len(value or b"")
            raise InvalidConfig(
                "config",
                f"{key} is a record of {size} bytes, more than the configs topic {self.topic} takes "
                f"(its max.message.bytes, or the worker's message.max.bytes): {error.str()}",
            ) from None
