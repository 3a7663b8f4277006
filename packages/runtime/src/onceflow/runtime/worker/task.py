"""WorkerTask: one task on its own thread, with the lifecycle start, pause, resume and stop.

States reported through the status listener: RUNNING once initialized, PAUSED while paused, FAILED
with the stack trace when the task raised. A task that failed stays FAILED (its thread has ended)
until it is restarted.
"""

from __future__ import annotations

import threading
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from onceflow.core.config_def import ParsedConfig
from onceflow.core.logging import get_logger
from onceflow.runtime.status import ProducerProgress, TargetState, TaskId, TaskStatus, WorkState

StatusListener = Callable[[TaskStatus], None]
_log = get_logger(__name__)

#: The connector's task a worker task runs (a ``SourceTask``, a ``SinkTask``).
ConnectorTaskT = TypeVar("ConnectorTaskT")


@dataclass(frozen=True, slots=True)
class TaskSetup(Generic[ConnectorTaskT]):
    """What every worker task of a connector is built from: its id, the worker running it, where its
    status goes and the state it starts in, the connector's ``task`` with its ``task_config``, and the
    connector's parsed config."""

    task_id: TaskId
    worker_id: str
    listener: StatusListener
    target: TargetState
    task: ConnectorTaskT
    task_config: Mapping[str, str]
    connector_config: ParsedConfig


class WorkerTask(ABC):
    """Runs ``initialize``, then ``execute`` in a loop until stopped, then ``close``.

    Subclasses fill in those three, plus ``on_pause`` (called once when a pause takes effect).
    """

    def __init__(
        self, task_id: TaskId, worker_id: str, listener: StatusListener, target: TargetState = TargetState.STARTED
    ) -> None:
        self.id = task_id
        self.worker_id = worker_id
        self._listener = listener
        self._target = target
        self._state = WorkState.UNASSIGNED
        self._trace = ""
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"task-{task_id}", daemon=True)

    # -- lifecycle (called by the worker) ------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def set_target_state(self, target: TargetState) -> None:
        """Pause (PAUSED) or resume (STARTED); takes effect between iterations."""
        self._target = target
        self._wake.set()

    def stop(self) -> None:
        """Ask the task to stop; returns at once (see :meth:`await_stop`)."""
        self._stopping.set()
        self._wake.set()
        self.on_stop_requested()

    def await_stop(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def state(self) -> WorkState:
        return self._state

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def status(self) -> TaskStatus:
        return TaskStatus(self.id, self._state, self.worker_id, self._trace, self.producer_progress())

    def producer_progress(self) -> ProducerProgress:
        """Exactly-once tasks report their producer here; others report nothing."""
        return ProducerProgress()

    # -- hooks ------------------------------------------------------------------------------------------

    @abstractmethod
    def initialize(self) -> None: ...

    @abstractmethod
    def execute(self) -> None:
        """One iteration; must return within about a poll interval."""

    @abstractmethod
    def close(self, failed: bool) -> None: ...

    def on_pause(self) -> None:  # noqa: B027 - optional hook
        """Called on the task thread when a pause takes effect."""

    def on_stop_requested(self) -> None:  # noqa: B027 - optional hook
        """Called on the caller's thread by :meth:`stop` (e.g. to interrupt a blocking poll)."""

    # -- the loop -----------------------------------------------------------------------------------

    def _set_state(self, state: WorkState, trace: str = "") -> None:
        self._state = state
        self._trace = trace
        try:
            self._listener(self.status())
        except Exception:
            _log.exception("task.status_report_failed", connector=self.id.connector, task=self.id.task)

    def _run(self) -> None:
        failed = False
        try:
            self.initialize()
            if not self._stopping.is_set():
                self._set_state(WorkState.RUNNING)
            while not self._stopping.is_set():
                if self._target is TargetState.PAUSED:
                    if self._state is not WorkState.PAUSED:
                        self.on_pause()
                        self._set_state(WorkState.PAUSED)
                        _log.info("task.paused", connector=self.id.connector, task=self.id.task)
                    self._wake.wait(0.5)
                    self._wake.clear()
                    continue
                if self._state is WorkState.PAUSED:
                    self._set_state(WorkState.RUNNING)
                    _log.info("task.resumed", connector=self.id.connector, task=self.id.task)
                self.execute()
        except Exception as exc:
            failed = True
            _log.error("task.failed", connector=self.id.connector, task=self.id.task, error=repr(exc))
            self._set_state(WorkState.FAILED, traceback.format_exc())
        finally:
            try:
                self.close(failed)
            except Exception as exc:
                _log.warning("task.close_failed", connector=self.id.connector, task=self.id.task, error=repr(exc))
                if not failed:
                    self._set_state(WorkState.FAILED, traceback.format_exc())
