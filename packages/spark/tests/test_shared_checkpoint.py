"""Two drivers of one job on one local checkpoint: the coordinator keeps them apart, and every sink ends
exact (docs/design.md failure matrix; the checkpoint's rename cannot, see
:mod:`onceflow.spark.runner.checkpoint_manager`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.spark.service import EXIT_FENCED

from .driver_process import DriverProcess
from .system import SinkSystem, encoded_events, end_input, produce_events, recent_model, truth

pytestmark = pytest.mark.slow

EVENTS_PER_ROUND = 12_000  # ~12 s of event time: A's first windows close
JOB = "ipcount"


def test_a_second_driver_on_the_same_checkpoint_fences_the_first_and_the_sinks_stay_exact(
    broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path
) -> None:
    """Steps:
    1. Driver A runs the job and commits a batch with rows.
    2. Driver B starts with the same config, so on the same checkpoint directory: it registers (a
       higher writer epoch), then starts its query from A's checkpoint.
    3. More input: both drivers plan the next batches on the one checkpoint. A's next call to the
       coordinator is fenced and A exits on its own as fenced, without restarting. (If A's query failed
       first for another reason, say a log entry B wrote, A's restart registers again and B is the
       one fenced: then A goes on.)
    4. The other one reads the rest of the input and closes every window: every sink holds exactly
       the truth, and the checkpoint was written by the FileSystem-based manager (its ``.crc`` files;
       Spark's default writes none on a local path).
    """
    model = recent_model(26)
    expected = truth(model, 2 * EVENTS_PER_ROUND)
    checkpoint = tmp_path / JOB / "checkpoint"
    config = system.job_config(tmp_path, JOB, {"checkpoint_location": str(checkpoint)})
    drivers = [DriverProcess(config, tmp_path / "a.log"), DriverProcess(config, tmp_path / "b.log")]
    # Step 1
    produce_events(broker.bootstrap_servers, encoded_events(model, 0, EVENTS_PER_ROUND))
    drivers[0].start()
    try:
        drivers[0].wait_for_log("sink.batch_committed", timeout=240)
        # Step 2
        drivers[1].start()
        drivers[1].wait_for_log("driver.registered", timeout=240)  # before its query reads the checkpoint
        # Step 3
        produce_events(broker.bootstrap_servers, encoded_events(model, EVENTS_PER_ROUND, 2 * EVENTS_PER_ROUND))
        fenced, survivor = _first_to_exit(drivers, timeout=240)
        assert fenced.wait(30) == EXIT_FENCED, fenced.log()[-4000:]  # a fenced driver does not restart
        assert "driver.fenced" in fenced.log() or "WriterFenced" in fenced.log(), fenced.log()[-4000:]
        # Step 4
        end_input(broker.bootstrap_servers)
        system.wait_for_results(expected, timeout=300)
        system.wait_exact(expected)
        assert survivor.poll() is None, survivor.log()[-4000:]
        offsets = sorted(p.name for p in (checkpoint / "offsets").iterdir())
        assert any(name.endswith(".crc") for name in offsets), offsets
    finally:
        codes = [driver.stop() for driver in drivers]
    assert EXIT_FENCED in codes and 0 in codes, codes


def _first_to_exit(drivers: list[DriverProcess], timeout: float) -> tuple[DriverProcess, DriverProcess]:
    """The driver that exits first and the other one; fails if neither exits within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for driver, other in (drivers, drivers[::-1]):
            if driver.poll() is not None:
                return driver, other
        time.sleep(0.2)
    raise AssertionError(f"neither driver was fenced within {timeout}s:\n{drivers[0].log()[-3000:]}")
