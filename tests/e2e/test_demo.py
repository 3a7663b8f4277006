"""End to end: ``onceflow demo`` with real processes (broker, coordinator, participant, connect worker
with the generator, the Spark job, the consumer), interrupted with Ctrl-C and resumed, runs to
completion and audits every sink EXACT, the Delta table of ``--lakehouse`` included.

One test: a run that completes uninterrupted is the second half of this one (the resumed run goes on
to the end and audits); a separate uninterrupted run would cost another two minutes of ``make test``
and check nothing more. Slow (two Spark JVM start-ups); it still runs in ``make test``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .demo_process import DemoProcess, verdicts

SINKS = ("kafka", "sqlite", "postgres", "consumer")
#: ``--lakehouse`` adds a Delta Lake table.
LAKEHOUSE_SINKS = (*SINKS, "delta")


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_an_exact_verdict_without_generating_an_event_twice(
    tmp_path: Path, demos: list[DemoProcess]
) -> None:
    run_dir = tmp_path / "run"
    # The generator starts while the Spark job warms up (20 s on an idle 2-core machine, over 70 s
    # beside another suite's Kafka cluster), and the progress lines only once the job serves. At 150
    # events/s, 60,000 events take 400 s: more than the 300 s this waits for the first line past
    # 2,000 plus the interrupt's shutdown, however slow the warm-up, so the run is always cut short.
    first = DemoProcess(run_dir, "--events", "60000", "--rate", "150", "--postgres", "--lakehouse", "--timeout", "600")
    demos.append(first)
    deadline = time.monotonic() + 300
    while first.produced() < 2_000:
        assert first.process.poll() is None, first.tail()
        assert time.monotonic() < deadline, first.tail()
        time.sleep(0.5)
    first.interrupt()
    assert first.wait(300) == 130, first.tail()
    assert "interrupted" in first.output
    stopped_at = first.produced()
    assert stopped_at < 60_000

    # The rest of the run at a faster pace: the same events, sooner.
    second = DemoProcess(run_dir, "--resume", "--rate", "20000", "--timeout", "420")
    demos.append(second)
    assert second.wait(600) == 0, second.tail()
    output = second.output
    assert "resuming run" in output
    assert "pace: 20000 events/s (was 150)" in output
    assert verdicts(output) == {**dict.fromkeys(LAKEHOUSE_SINKS, "EXACT"), "overall": "EXACT"}, second.tail()
    # Generator truth: all 60,000 events, and the source topic holds exactly them, none twice (its
    # end-of-input markers are not events): every window closed at the end of input, the last ones included.
    assert "generator seed=7 count=60000: 60000 events" in output
    assert "topic ip_count_source (read_committed): 60000 events" in output
    assert re.search(r"complete lines=60000 events=60000/60000 .* counted=60000 ", output), second.tail()
