"""The Supervisor: keeps every service of the demo running, restarting crashed ones after a fixed delay.

A background thread watches the services every ``tick_s``:

1. a service whose main process exited is recorded (``exited`` with its exit code; -9 is a kill -9)
   and scheduled for a restart ``policy.delay_s`` later, or given up when its policy says so;
2. a service whose restart is due is spawned again (``restarting``, then ``started``);
3. a started service is probed until it is ready (``ready`` the first time, ``recovered`` after a
   restart, with the downtime).

Exits are therefore handled the same way during startup and later: a coordinator that dies because
the broker is not up yet is simply started again.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from onceflow.core.logging import get_logger
from onceflow.demo.supervisor.child import ChildProcess
from onceflow.demo.supervisor.events import EventJournal, EventKind
from onceflow.demo.supervisor.policy import RestartPolicy

_log = get_logger(__name__)

#: A readiness probe: True once the (current instance of the) child serves.
Probe = Callable[[ChildProcess], bool]


class ServiceState(enum.Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    BACKOFF = "backoff"
    FAILED = "failed"


class ServiceFailedError(RuntimeError):
    """A service could not be (re)started: it was given up, or did not get ready in time."""

    def __init__(self, service: str, reason: str, log_tail: str = "") -> None:
        super().__init__(f"{service}: {reason}" + (f"\n--- last lines of its log ---\n{log_tail}" if log_tail else ""))
        self.service = service
        self.reason = reason


@dataclass
class SupervisedService:
    """A child with its probe and policy, and what the supervisor knows about it."""

    child: ChildProcess
    probe: Probe
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    state: ServiceState = ServiceState.STOPPED
    restarts: int = 0
    ready_once: bool = False
    down_since: float | None = None
    restart_due: float = 0.0
    last_exit_code: int | None = None
    #: ``time.monotonic()`` when the current instance became ready (None while it is not).
    running_since: float | None = None
    #: How long the last restart took, from the exit to ready again (0 before the first restart).
    last_downtime_s: float = 0.0
    #: Called before every (re)start, e.g. to rewrite a config file or clear a stale ready file.
    before_start: Callable[[], None] = lambda: None
    _killed_by_us: bool = field(default=False, repr=False)

    @property
    def name(self) -> str:
        return self.child.name


class Supervisor:
    """Starts services, watches them, restarts crashed ones; thread-safe."""

    def __init__(self, journal: EventJournal | None = None, *, tick_s: float = 0.2) -> None:
        self.journal = journal or EventJournal()
        self.tick_s = tick_s
        self._services: dict[str, SupervisedService] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- set-up ----------------------------------------------------------------------------

    def add(self, service: SupervisedService) -> None:
        with self._lock:
            if service.name in self._services:
                raise ValueError(f"service {service.name!r} is already supervised")
            self._services[service.name] = service

    def service(self, name: str) -> SupervisedService:
        return self._services[name]

    def names(self) -> list[str]:
        return list(self._services)

    def uptime(self, name: str) -> float | None:
        """Seconds since ``name``'s current instance became ready (None while it is not running)."""
        since = self._services[name].running_since
        return None if since is None else time.monotonic() - since

    def states(self) -> dict[str, ServiceState]:
        with self._lock:
            return {name: s.state for name, s in self._services.items()}

    def watch(self) -> None:
        """Start the watching thread (idempotent)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="onceflow-demo-supervisor", daemon=True)
            self._thread.start()

    # --- operations ------------------------------------------------------------------------

    def start(self, name: str) -> None:
        """Spawn a stopped service; the watching thread takes it from there."""
        with self._lock:
            service = self._services[name]
            if service.state not in (ServiceState.STOPPED, ServiceState.FAILED):
                return
            self._spawn(service)

    def wait_ready(self, name: str, timeout: float) -> None:
        """Block until ``name`` is RUNNING; :class:`ServiceFailedError` if it is given up or times out."""
        service = self._services[name]
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                state = service.state
            if state is ServiceState.RUNNING:
                return
            if state is ServiceState.FAILED:
                raise ServiceFailedError(name, "given up after repeated crashes", service.child.log_tail())
            if time.monotonic() > deadline:
                raise ServiceFailedError(name, f"not ready within {timeout:.0f}s", service.child.log_tail())
            if self._thread is None:
                self._tick()
            time.sleep(0.05)

    def kill(self, name: str) -> int | None:
        """``kill -9`` a running service (chaos); it is restarted by the policy. Returns the killed pid."""
        with self._lock:
            service = self._services[name]
            pid = service.child.pid
            if not service.child.running():
                return None
            service._killed_by_us = True
            # Recorded first, so the journal reads "killed" before the watcher's "exited".
            self.journal.record(name, EventKind.KILLED, pid=pid, detail="kill -9 (chaos)")
            _log.warning("supervisor.killed", service=name, pid=pid)
            service.child.kill()
        return pid

    def stop_service(self, name: str, timeout: float = 20.0) -> None:
        """Stop one service gracefully and keep it stopped (the others stay supervised)."""
        service = self._services[name]
        with self._lock:
            service.state = ServiceState.STOPPED
        pid = service.child.pid
        code = service.child.stop(timeout)
        self.journal.record(name, EventKind.STOPPED, pid=pid, exit_code=code)
        _log.info("supervisor.stopped", service=name, pid=pid, exit_code=code)

    def stop(self, names: Iterable[str] | None = None, timeout: float = 20.0) -> None:
        """Stop watching, then stop ``names`` (default: all, in reverse order of addition) gracefully."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        order = list(names) if names is not None else list(reversed(self._services))
        for name in order:
            service = self._services[name]
            if service.child.pid is None:
                continue
            pid = service.child.pid
            code = service.child.stop(timeout)
            with self._lock:
                service.state = ServiceState.STOPPED
            self.journal.record(name, EventKind.STOPPED, pid=pid, exit_code=code)
            _log.info("supervisor.stopped", service=name, pid=pid, exit_code=code)

    # --- the watching thread -----------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                self._tick()
            except Exception as exc:  # keep watching: one bad probe must not end supervision
                _log.error("supervisor.tick_failed", error=f"{type(exc).__name__}: {exc}")

    def _tick(self) -> None:
        now = time.monotonic()
        for service in list(self._services.values()):
            with self._lock:
                state = service.state
                # Step 1: an exited child is recorded and scheduled (or given up).
                if state in (ServiceState.STARTING, ServiceState.RUNNING):
                    code = service.child.poll()
                    if code is not None:
                        self._on_exit(service, code, now)
                        continue
                # Step 2: a due restart.
                if state is ServiceState.BACKOFF and now >= service.restart_due:
                    service.restarts += 1
                    self.journal.record(service.name, EventKind.RESTARTING, detail=f"restart #{service.restarts}")
                    _log.info("supervisor.restarting", service=service.name, restart=service.restarts)
                    self._spawn(service)
                    continue
            # Step 3: probe a starting child (outside the lock: probes may take a moment).
            if state is ServiceState.STARTING:
                self._probe(service)

    def _on_exit(self, service: SupervisedService, code: int, now: float) -> None:
        pid = service.child.pid
        service.running_since = None
        service.child.reap_session()
        service.last_exit_code = code
        killed, service._killed_by_us = service._killed_by_us, False
        if service.down_since is None:
            service.down_since = time.time()
        self.journal.record(service.name, EventKind.EXITED, pid=pid, exit_code=code, detail="killed" if killed else "")
        _log.warning("supervisor.exited", service=service.name, pid=pid, exit_code=code, killed=killed)
        if not service.policy.allows(service.restarts):
            service.state = ServiceState.FAILED
            self.journal.record(service.name, EventKind.GAVE_UP, detail=f"after {service.restarts} restarts")
            _log.error("supervisor.gave_up", service=service.name, restarts=service.restarts)
            return
        service.state = ServiceState.BACKOFF
        service.restart_due = now + service.policy.delay_s

    def _spawn(self, service: SupervisedService) -> None:
        service.before_start()
        pid = service.child.spawn()
        service.state = ServiceState.STARTING
        self.journal.record(service.name, EventKind.STARTED, pid=pid)
        _log.info("supervisor.started", service=service.name, pid=pid)

    def _probe(self, service: SupervisedService) -> None:
        try:
            ready = service.probe(service.child)
        except Exception as exc:
            _log.debug("supervisor.probe_failed", service=service.name, error=str(exc))
            ready = False
        if not ready:
            return
        with self._lock:
            if service.state is not ServiceState.STARTING or not service.child.running():
                return
            service.state = ServiceState.RUNNING
            service.running_since = time.monotonic()
            pid = service.child.pid
            if service.ready_once:
                downtime = time.time() - service.down_since if service.down_since is not None else 0.0
                service.last_downtime_s = downtime
                self.journal.record(service.name, EventKind.RECOVERED, pid=pid, detail=f"down {downtime:.1f}s")
                _log.info("supervisor.recovered", service=service.name, pid=pid, downtime_s=round(downtime, 1))
            else:
                self.journal.record(service.name, EventKind.READY, pid=pid)
                _log.info("supervisor.ready", service=service.name, pid=pid)
            service.ready_once = True
            service.down_since = None
