"""A coordinator that serves only while it leads: hot standby, take-over and stepping down.

A standby instance answers every TransactionCoordinator RPC with UNAVAILABLE naming the active
instance (its engine raises :class:`~onceflow.coordinator.exceptions.CoordinatorNotActive`) and
reports NOT_SERVING health. When the election (:class:`LeaderElection`) makes it the active one,
it takes over in the background:

Steps:
    1. Open the log: its ``init_transactions`` fences the previous active instance (whose next
       write fails), the log is checked (fail closed) and replayed, and checked against the
       participants' commit records.
    2. Recover: re-send COMMIT and ABORT decisions, presume abort for undecided batches.
    3. Serve: health SERVING, ``coordinator.active`` logged with how long the take-over took.

An instance that loses the leadership (it missed its session timeout, or its election failed and
rejoined the group) stops serving at once and ends with the fenced exit code: its memory may
already be stale, and its supervisor restarts it as a standby. A take-over that fails (a log
that is missing, truncated or unsafe) ends it too.
"""

from __future__ import annotations

import threading
import time

from grpc_health.v1 import health, health_pb2

from onceflow.coordinator.election import LeaderElection
from onceflow.coordinator.engine import RecoveryReport, TwoPhaseCommitEngine
from onceflow.coordinator.servicer import SERVICE_NAME
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.logging import get_logger

_log = get_logger(__name__)
_HEALTH_NAMES = ("", SERVICE_NAME)


def set_serving(servicer: health.HealthServicer, serving: bool) -> None:
    """The server's and the TransactionCoordinator service's health: SERVING or NOT_SERVING."""
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in _HEALTH_NAMES:
        servicer.set(name, status)


class Standby:
    """Runs the election for ``engine`` and takes over when elected (see the module docstring)."""

    def __init__(
        self, engine: TwoPhaseCommitEngine, settings: CoordinatorSettings, health_servicer: health.HealthServicer
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._health = health_servicer
        self._election: LeaderElection | None = None
        self.recovery: RecoveryReport | None = None
        #: Why the take-over failed (the process ends), None otherwise.
        self.failure: BaseException | None = None

    def start(self, advertised: str) -> None:
        """Join the election as ``advertised`` (the target clients reach this instance at)."""
        standby = self._settings.standby
        set_serving(self._health, False)
        self._engine.state.not_active(
            f"this coordinator ({advertised}) is a standby; no active coordinator is known yet"
        )
        self._election = LeaderElection(
            self._settings.kafka,
            self._settings.transaction_log.topic,
            group_id=standby.group_id,
            session_timeout_ms=standby.session_timeout_ms,
            advertised=advertised,
            on_elected=self._elected,
            on_lost=self._lost,
            on_leader=self._leader,
        )
        self._election.start()

    def _leader(self, leader: str | None) -> None:
        me = self._election.advertised if self._election is not None else "?"
        if leader is None:
            wait = self._settings.standby.session_timeout_ms / 1000
            reason = f"no coordinator is active right now; one takes over within about {wait:.0f}s, retry"
        else:
            reason = f"the active coordinator is {leader}"
        self._engine.state.not_active(f"this coordinator ({me}) is a standby; {reason}")

    def _elected(self) -> None:
        if self._engine.stopped.is_set():
            return  # lost the leadership (or closed) before: this process ends, it never takes over
        threading.Thread(target=self._take_over, name="coordinator-take-over", daemon=True).start()

    def _take_over(self) -> None:
        started = time.monotonic()
        _log.info("coordinator.taking_over", group=self._settings.standby.group_id)
        self._engine.state.not_active("this coordinator was elected and is taking over the log; retry")
        try:
            # Steps 1 and 2
            self.recovery = self._engine.start()
        except Exception as exc:
            self.failure = exc
            _log.error("coordinator.take_over_failed", error=exc)
            return
        if self._engine.stopped.is_set():
            return  # lost the leadership while taking over
        # Step 3
        set_serving(self._health, True)
        _log.info("coordinator.active", took_s=round(time.monotonic() - started, 3))

    def _lost(self, reason: str) -> None:
        set_serving(self._health, False)
        self._engine.state.fence(reason)

    def close(self) -> None:
        """Leave the election (after the engine closed: a standby may take over at once)."""
        if self._election is not None:
            self._election.close()
