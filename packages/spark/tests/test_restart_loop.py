"""The fixed-delay restart loop, with stand-in queries (the real ones run in the end-to-end tests)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from onceflow.spark.exceptions import RestartsExhausted, WriterFencedError, tag


@dataclass
class StandInQuery:
    """Fails after ``fail_after`` polls with ``error``; runs forever when ``error`` is None."""

    error: str | None
    fail_after: int = 1
    stopped: bool = False
    polls: int = 0

    def awaitTermination(self, timeout: float) -> bool:  # noqa: N802 - Spark's API
        self.polls += 1
        if self.error is not None and self.polls >= self.fail_after:
            raise RuntimeError(self.error)
        threading.Event().wait(min(timeout, 0.01))
        return self.stopped

    def exception(self) -> str | None:
        return self.error

    def stop(self) -> None:
        self.stopped = True


def test_restarts_a_failing_query_attempts_times_then_fails_with_the_last_error() -> None:
    from onceflow.spark.runner.restart import RestartLoop

    loop = RestartLoop("ipcount", 3, 0.0)
    started: list[StandInQuery] = []

    def start() -> StandInQuery:
        started.append(StandInQuery(f"boom {len(started)}"))
        return started[-1]

    with pytest.raises(RestartsExhausted, match="boom 3") as failed:
        loop.run(start)  # type: ignore[arg-type]
    assert len(started) == 4, "the first run and three restarts"
    assert "after 3 restart attempt(s)" in str(failed.value)


def test_a_query_that_fails_to_start_counts_as_a_failed_attempt() -> None:
    from onceflow.spark.runner.restart import RestartLoop

    calls = []

    def start() -> StandInQuery:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("coordinator unreachable")
        return StandInQuery(None)

    loop = RestartLoop("ipcount", 1, 0.0)
    runner = threading.Thread(target=loop.run, args=(start,))
    runner.start()
    while len(calls) < 2:
        threading.Event().wait(0.01)
    loop.stop()
    runner.join(5)
    assert not runner.is_alive()


def test_a_fenced_driver_is_not_restarted() -> None:
    from onceflow.spark.runner.restart import RestartLoop

    started: list[StandInQuery] = []

    def start() -> StandInQuery:
        started.append(StandInQuery(f"Py4J: {tag('WriterFencedError')} job 'ipcount': fenced"))
        return started[-1]

    with pytest.raises(WriterFencedError):
        RestartLoop("ipcount", 3, 0.0).run(start)  # type: ignore[arg-type]
    assert len(started) == 1


def test_stop_ends_the_loop_and_stops_the_query() -> None:
    from onceflow.spark.runner.restart import RestartLoop

    query = StandInQuery(None)
    loop = RestartLoop("ipcount", 3, 0.0)
    runner = threading.Thread(target=loop.run, args=(lambda: query,))
    runner.start()
    loop.stop()
    runner.join(5)
    assert not runner.is_alive() and query.stopped
