"""Herder: the control plane. It owns the connector configs, answers the admin API, and drives the
worker so that every task this worker owns runs in its target state.

Subclasses say which tasks this worker owns (:meth:`Herder.owns`) and how it waits for work
(:meth:`Herder.wait_for_work`): the standalone herder owns everything; the distributed herder owns the
tasks whose slots the Kafka consumer group assigned to it.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping

from onceflow.core.logging import get_logger
from onceflow.runtime.herder.admin_ops import AdminOperations
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.status import TargetState, TaskId, TaskStatus, WorkState
from onceflow.runtime.storage.configs import ClusterConfig
from onceflow.runtime.storage.restarts import RestartRequest
from onceflow.runtime.storage.stores import BackingStores
from onceflow.runtime.worker.worker import Worker

_log = get_logger(__name__)
#: How often running tasks re-publish their status (with their producer's progress).
STATUS_HEARTBEAT_S = 2.0


class Herder(AdminOperations, ABC):
    def __init__(
        self,
        worker: Worker,
        stores: BackingStores,
        plugins: PluginRegistry,
    ) -> None:
        super().__init__(worker, stores, plugins)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._restarts: list[RestartRequest] = []
        self._restarts_lock = threading.Lock()
        self._started_with: dict[TaskId, tuple[dict[str, str], dict[str, str]]] = {}
        self._thread = threading.Thread(target=self._run, name="herder", daemon=True)
        self._last_heartbeat = 0.0

    # -- what subclasses decide ------------------------------------------------------------------------

    @abstractmethod
    def owns(self, task: TaskId, cluster: ClusterConfig) -> bool:
        """Whether this worker should run ``task``."""

    def wait_for_work(self, timeout: float) -> None:
        """Block until something may have changed, or ``timeout``."""
        self._wake.wait(timeout)
        self._wake.clear()

    def start_membership(self) -> None:
        """Join whatever decides ownership (nothing, for standalone)."""

    def leave_membership(self) -> None:
        """Leave it, after this worker's tasks have stopped."""

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the stores (reading what they hold), join the cluster, then start the control loop."""
        self.configs.set_listeners(self.wakeup, self._restart_requested)
        self.offsets.start()
        self.statuses.start()
        self.configs.start()
        self.start_membership()
        self._thread.start()
        _log.info("herder.started", worker=self.worker.worker_id, kind=type(self).__name__)

    def stop(self, timeout: float = 60) -> None:
        """Graceful shutdown: stop the tasks (they commit), report them UNASSIGNED, leave, stop the stores."""
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout)
        self.configs.stop()
        self.statuses.stop()
        self.offsets.stop()
        _log.info("herder.stopped", worker=self.worker.worker_id)

    def wakeup(self) -> None:
        self._wake.set()

    def _restart_requested(self, request: RestartRequest) -> None:
        with self._restarts_lock:
            self._restarts.append(request)
        self.wakeup()

    # -- the control loop ----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                self.wait_for_work(0.2)
                if self._stopping.is_set():
                    break
                try:
                    self.reconcile()
                except Exception:
                    _log.exception("herder.reconcile_failed", worker=self.worker.worker_id)
                    time.sleep(1)
        finally:
            self.stop_tasks(list(self.worker.tasks()))
            self.leave_membership()

    def reconcile(self) -> None:
        """Steps:
        1. Work out the tasks this worker should run, from a snapshot of the configs.
        2. Stop the ones it runs but should not (or whose config changed).
        3. Apply restart requests to the tasks it runs.
        4. Start the missing ones, in their target state; pause or resume the others.
        5. Re-publish the statuses of running tasks every few seconds.
        """
        # Step 1
        cluster = self.configs.snapshot()
        desired: dict[TaskId, tuple[dict[str, str], dict[str, str], TargetState]] = {}
        for task_id in cluster.tasks():
            entry = cluster.connectors[task_id.connector]
            if entry.target_state is not TargetState.STOPPED and self.owns(task_id, cluster):
                desired[task_id] = (entry.config, entry.task_configs[task_id.task], entry.target_state)
        # Step 2
        running = self.worker.tasks()
        stale = [t for t in running if t not in desired or self._started_with.get(t) != (desired[t][0], desired[t][1])]
        if stale:
            self.stop_tasks(stale, cluster)
        # Step 3
        with self._restarts_lock:
            restarts, self._restarts = self._restarts, []
        for request in restarts:
            self._apply_restart(request)
        # Step 4
        running = self.worker.tasks()
        for task_id, (config, task_config, target) in desired.items():
            if task_id not in running:
                self._started_with[task_id] = (config, task_config)
                self.worker.start_task(task_id, config, task_config, target)
            else:
                self.worker.set_target_state(task_id, target)
        # Step 5
        if time.monotonic() - self._last_heartbeat >= STATUS_HEARTBEAT_S:
            self._last_heartbeat = time.monotonic()
            for task in self.worker.tasks().values():
                if task.state in (WorkState.RUNNING, WorkState.PAUSED):
                    self.statuses.put(task.status())

    def _apply_restart(self, request: RestartRequest) -> None:
        tasks = [t for t in self.worker.tasks().values() if t.id.connector == request.connector]
        if request.task is not None:
            chosen = [t for t in tasks if t.id.task == request.task]
        elif request.include_tasks:
            chosen = [t for t in tasks if not request.only_failed or t.state is WorkState.FAILED]
        else:
            chosen = []
        if not chosen:
            return
        _log.info("herder.restarting", connector=request.connector, tasks=[t.id.task for t in chosen])
        ids = [t.id for t in chosen]
        for task_id in ids:
            self.statuses.put(TaskStatus(task_id, WorkState.RESTARTING, self.worker.worker_id))
        self.worker.stop_tasks(ids)
        for task_id in ids:
            self._started_with.pop(task_id, None)  # step 4 starts them again

    def stop_tasks(self, task_ids: list[TaskId], cluster: ClusterConfig | None = None) -> None:
        """Stop tasks and report where they went: STOPPED (connector stopped), nothing (deleted), or
        UNASSIGNED (moved away, or this worker is leaving)."""
        self.worker.stop_tasks(task_ids)
        for task_id in task_ids:
            self._started_with.pop(task_id, None)
            entry = cluster.connectors.get(task_id.connector) if cluster is not None else None
            if cluster is not None and entry is None:
                self.statuses.remove_connector(task_id.connector, task_id.task + 1)
                continue
            stopped = entry is not None and entry.target_state is TargetState.STOPPED
            state = WorkState.STOPPED if stopped else WorkState.UNASSIGNED
            self.statuses.put(TaskStatus(task_id, state, self.worker.worker_id))
        self.statuses.flush()

    def local_status(self, task_id: TaskId) -> TaskStatus | None:
        task = self.worker.task(task_id)
        return task.status() if task is not None else None

    def describe(self) -> Mapping[str, object]:
        """For logs and debugging: what this herder runs."""
        return {"worker": self.worker.worker_id, "tasks": sorted(str(t) for t in self.worker.tasks())}
