"""Chaos end to end: ``onceflow demo --chaos`` with 300,000 events and at least 20 ``kill -9`` spread over
every service (broker included); every sink must still be EXACT.

Slow (about 5 minutes on a 2-core machine); it still runs in ``make test``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .demo_process import CHAOS_LINE, DemoProcess, verdicts

SERVICES = ("broker", "coordinator", "participant", "consumer", "spark", "connect")
EVENTS = 300_000


@pytest.fixture
def demo(tmp_path: Path, demos: list[DemoProcess]) -> DemoProcess:
    """The chaos run (stopped by ``demos`` if the test ends before it does)."""
    process = DemoProcess(
        tmp_path / "run",
        "--events", str(EVENTS),
        "--rate", "2000",
        "--postgres",
        "--chaos", "--chaos-interval", "8", "--chaos-seed", "11",
        "--timeout", "540",
    )  # fmt: skip
    demos.append(process)
    return process


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_sink_is_exact_after_twenty_kills_of_every_service(demo: DemoProcess) -> None:
    code = demo.wait(840)
    output = demo.output
    chaos = CHAOS_LINE.search(output)
    assert chaos is not None, demo.tail()
    kills = int(chaos.group(1))
    by_service: dict[str, int] = ast.literal_eval(chaos.group(2))
    print(f"chaos: {kills} kills {by_service} in {demo.elapsed():.0f}s")
    assert kills >= 20, demo.tail()
    assert set(by_service) == set(SERVICES), f"not every service was killed: {by_service}"
    assert code == 0, demo.tail()
    sinks = ("kafka", "sqlite", "postgres", "consumer", "overall")
    assert verdicts(output) == dict.fromkeys(sinks, "EXACT"), demo.tail()
    assert f"generator seed=7 count={EVENTS}: {EVENTS} events" in output
    assert f"topic ip_count_source (read_committed): {EVENTS} events" in output
