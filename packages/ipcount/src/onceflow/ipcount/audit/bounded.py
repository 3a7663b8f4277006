"""An audit a client asked for over the Results API, kept within bounds.

``RunAudit`` runs the audit in a child process (spawned, so no gRPC state is forked) that the server
can always stop, whatever the audit is doing:

    1. Refuse a generator truth larger than ``max_generator_events`` before anything runs (its memory
       and time grow with the count), and an audit past ``max_concurrent`` running ones
       (:class:`AuditsBusy`, RESOURCE_EXHAUSTED: each one holds a child process and its memory).
    2. Start the child; it calls ``faults.at("audit.started")`` (the injection point: tests hold the
       audit there, so a bound is tested whatever the machine's speed; nothing happens by default),
       runs :meth:`Auditor.run` and sends back the report (or the error).
    3. Wait, checking every tick: the client went away (``is_active`` false), the call's deadline or
       ``max_duration_s`` passed, or the server is shutting down (SIGTERM) -> kill the child and fail
       the call with CANCELLED / DEADLINE_EXCEEDED / UNAVAILABLE.
    4. Otherwise return the child's report, or raise its error (InvalidQuery stays INVALID_ARGUMENT).
    5. Give the audit's slot back (step 1), however it ended.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection

from onceflow.consumer.exceptions import ConsumerError, InvalidQuery
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.ipcount.audit.model import AuditReport
from onceflow.ipcount.audit.runner import Auditor, GeneratorSource, TruthSource

_log = get_logger(__name__)

#: How often the waiting server checks its client, the deadline and shutdown.
TICK_S = 0.1


class AuditsBusy(ConsumerError):  # noqa: N818 - reads as the server's state
    """As many audits as ``audit.max_concurrent`` allows are running; retry when one has ended."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"{limit} audits are running, the most audit.max_concurrent = {limit} allows; retry later")


class AuditStopped(ConsumerError):  # noqa: N818 - reads as an outcome
    """The audit was stopped before it finished; ``why`` is ``cancelled``, ``deadline`` or ``shutdown``."""

    def __init__(self, why: str, detail: str) -> None:
        self.why = why
        super().__init__(detail)


#: The injection point the audit child reaches before it starts (step 2).
AUDIT_STARTED = "audit.started"


def _child(auditor: Auditor, source: TruthSource, sinks: list[str], out: Connection, faults: FaultInjector) -> None:
    try:
        faults.at(AUDIT_STARTED)
        out.send(("report", auditor.run(source, sinks)))
    except InvalidQuery as exc:
        out.send(("invalid", (exc.argument, exc.reason)))
    except BaseException as exc:  # the parent re-raises what it can name
        out.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        out.close()


class BoundedAuditRunner:
    """Runs audits in a child process it can stop (steps in the module docstring)."""

    def __init__(
        self,
        auditor: Auditor,
        *,
        max_generator_events: int,
        max_duration_s: float,
        max_concurrent: int,
        faults: FaultInjector = NO_FAULTS,
    ) -> None:
        self.auditor = auditor
        self.max_generator_events = max_generator_events
        self.max_duration_s = max_duration_s
        self.max_concurrent = max_concurrent
        self.shutdown = threading.Event()
        self._faults = faults
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._context = multiprocessing.get_context("spawn")

    def run(
        self,
        source: TruthSource,
        sinks: Sequence[str],
        *,
        is_active: Callable[[], bool] = lambda: True,
        time_remaining: Callable[[], float | None] = lambda: None,
    ) -> AuditReport:
        # Step 1
        if isinstance(source, GeneratorSource) and source.count > self.max_generator_events:
            raise InvalidQuery(
                "generator.count", f"{source.count} events is more than the limit of {self.max_generator_events}"
            )
        if not self._slots.acquire(blocking=False):
            raise AuditsBusy(self.max_concurrent)
        try:
            return self._run(source, sinks, is_active, time_remaining)
        finally:
            self._slots.release()  # Step 5

    def _run(
        self,
        source: TruthSource,
        sinks: Sequence[str],
        is_active: Callable[[], bool],
        time_remaining: Callable[[], float | None],
    ) -> AuditReport:
        # Step 2
        receive, send = self._context.Pipe(duplex=False)
        args = (self.auditor, source, list(sinks), send, self._faults)
        child = self._context.Process(target=_child, args=args, daemon=True)
        child.start()
        send.close()
        started = time.monotonic()
        try:
            # Step 3
            while not receive.poll(TICK_S):
                stop = self._why_stop(started, is_active, time_remaining)
                if stop is not None:
                    raise AuditStopped(*stop)
                if not child.is_alive() and not receive.poll(0):
                    raise RuntimeError(f"the audit process died (exit code {child.exitcode})")
            # Step 4
            kind, value = receive.recv()
        except EOFError:
            raise RuntimeError(f"the audit process died (exit code {child.exitcode})") from None
        finally:
            receive.close()
            if child.is_alive():
                child.kill()
            child.join(5)
        if kind == "invalid":
            raise InvalidQuery(*value)
        if kind == "error":
            raise RuntimeError(f"the audit failed: {value}")
        report: AuditReport = value
        return report

    def _why_stop(
        self, started: float, is_active: Callable[[], bool], time_remaining: Callable[[], float | None]
    ) -> tuple[str, str] | None:
        if self.shutdown.is_set():
            return "shutdown", "the server is shutting down"
        if not is_active():
            return "cancelled", "the client went away"
        remaining = time_remaining()
        if remaining is not None and remaining <= 0:
            return "deadline", "the call's deadline passed"
        if time.monotonic() - started > self.max_duration_s:
            return "deadline", f"the audit ran longer than max_duration_s={self.max_duration_s:g}"
        return None

    def stop(self) -> None:
        """Shutdown: every running audit is stopped (step 3)."""
        self.shutdown.set()
