"""The whole pipeline on Apache Kafka: ``onceflow demo --bootstrap-servers`` against a real KRaft Kafka
(the fixture of ``onceflow.testing.broker.apache_kafka``), with chaos: the demo ``kill -9``s every one of
its services, and the test ``kill -9``s Kafka itself and restarts it on the same data. Every sink must
still be EXACT against the generator's truth and the source topic.

Slow (a Spark JVM and a Kafka JVM, about 4 minutes on a 2-core machine); it still runs in ``make test``.
"""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onceflow.testing.broker.apache_kafka import ApacheKafka

from .demo_process import CHAOS_LINE, DemoProcess, verdicts

SERVICES = ("coordinator", "participant", "consumer", "spark", "connect")
EVENTS = 120_000
KAFKA_KILLS = 3


def kill_kafka_repeatedly(kafka: ApacheKafka, demo: DemoProcess, stop: threading.Event, kills: list[float]) -> None:
    """Once events flow: ``kill -9`` Kafka, restart it on the same data and ports, KAFKA_KILLS times."""
    while demo.produced() < 5_000 and not stop.is_set():
        time.sleep(0.5)
    while len(kills) < KAFKA_KILLS and not stop.wait(15):
        kafka.kill()
        kills.append(time.monotonic())
        time.sleep(2)
        kafka.start()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_sink_is_exact_on_apache_kafka_after_kills_of_every_service_and_of_kafka(
    tmp_path: Path,
    demos: list[DemoProcess],
    apache_kafka_factory: Callable[..., ApacheKafka],
) -> None:
    kafka = apache_kafka_factory(tmp_path / "kafka")
    demo = DemoProcess(
        tmp_path / "run",
        "--bootstrap-servers", kafka.bootstrap_servers,
        "--events", str(EVENTS), "--rate", "1500", "--postgres",
        "--chaos", "--chaos-interval", "10", "--chaos-seed", "5",
        "--timeout", "600",
    )  # fmt: skip
    demos.append(demo)
    stop = threading.Event()
    kills: list[float] = []
    killer = threading.Thread(target=kill_kafka_repeatedly, args=(kafka, demo, stop, kills), daemon=True)
    killer.start()
    try:
        code = demo.wait(840)
    finally:
        stop.set()
        killer.join(60)
    output = demo.output
    chaos = CHAOS_LINE.search(output)
    assert chaos is not None, demo.tail()
    by_service: dict[str, Any] = ast.literal_eval(chaos.group(2))
    print(f"chaos: {chaos.group(1)} kills {by_service}, Kafka killed {len(kills)} times, {demo.elapsed():.0f}s")
    assert len(kills) == KAFKA_KILLS, demo.tail()
    assert set(by_service) <= set(SERVICES) and len(by_service) >= 3, by_service
    assert code == 0, demo.tail()
    sinks = ("kafka", "sqlite", "postgres", "consumer", "overall")
    assert verdicts(output) == dict.fromkeys(sinks, "EXACT"), demo.tail()
    assert f"generator seed=7 count={EVENTS}: {EVENTS} events" in output
    assert f"topic ip_count_source (read_committed): {EVENTS} events" in output
