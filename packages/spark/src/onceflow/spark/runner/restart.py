"""Fixed-delay restarts of the streaming query from its checkpoint (Flink's ``fixedDelayRestart``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql.streaming.query import StreamingQuery

from onceflow.core.logging import get_logger
from onceflow.spark.exceptions import JobDefinitionError, RestartsExhausted, WriterFencedError, is_fenced

_log = get_logger(__name__)


@dataclass
class RestartLoop:
    """Runs a streaming query and restarts it after failures, ``attempts`` times, ``delay_s`` apart.

    Like Flink's fixed-delay strategy, the attempts are counted over the life of the loop. A fenced
    driver (another driver registered for the job) is never restarted: the job belongs to the other.
    :meth:`stop` (e.g. on SIGTERM) stops the running query and ends the loop without an error.
    """

    job: str
    attempts: int
    delay_s: float
    on_restart: Callable[[], None] = lambda: None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _query: StreamingQuery | None = None

    def stop(self) -> None:
        self._stopping.set()

    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopping.is_set()

    def run(self, start: Callable[[], StreamingQuery]) -> None:
        """Run until stopped; raises :class:`WriterFencedError` or :class:`RestartsExhausted`.

        Steps:
            1. Start the query (``start`` registers the driver and resumes from the checkpoint).
            2. Wait until it terminates or :meth:`stop` is called (then stop it and return).
            3. On failure: a fenced driver, or a job that cannot start as defined, raises at once.
            4. Otherwise, while attempts are left, wait ``delay_s`` and go back to step 1; when they
               are used up, raise :class:`RestartsExhausted` with the last error.
        """
        restarts = 0
        while True:
            try:
                # Step 1
                self._query = start()
                # Step 2
                if self._wait(self._query):
                    return
                error = self._query.exception()
                message = str(error) if error is not None else "the query stopped by itself"
            except Exception as exc:  # the attempt failed to start or its query failed
                if isinstance(exc, WriterFencedError | JobDefinitionError):
                    raise
                message = f"{type(exc).__name__}: {exc}"
            # Step 3
            if is_fenced(message):
                _log.error("driver.fenced", job=self.job, error=message)
                raise WriterFencedError(self.job, 0, message)
            # Step 4
            if restarts >= self.attempts:
                _log.error("query.restarts_exhausted", job=self.job, attempts=restarts, error=message)
                raise RestartsExhausted(self.job, restarts, message)
            restarts += 1
            _log.warning(
                "query.restarting",
                job=self.job,
                attempt=restarts,
                of=self.attempts,
                delay_s=self.delay_s,
                error=message,
            )
            self.on_restart()
            if self._stopping.wait(self.delay_s):
                return

    def _wait(self, query: StreamingQuery) -> bool:
        """Block until the query ends (False) or the loop is asked to stop (True, query stopped)."""
        while not self._stopping.is_set():
            try:
                if query.awaitTermination(1):
                    return False
            except Exception:
                return False
        query.stop()
        return True
