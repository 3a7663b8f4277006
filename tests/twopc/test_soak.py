"""A randomized soak: 1,000 transactions while a chaos loop ``kill -9``-s the coordinator and the participants.

Environment knobs (for longer runs by hand): ``ONCEFLOW_SOAK_TXNS`` (default 1000) and
``ONCEFLOW_SOAK_SEED`` (default: random, printed so a failing run can be replayed as closely as
process timing allows).
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import grpc
import pytest

from onceflow.contract.clients import RpcFailed
from onceflow.contract.staging import StagedFile
from onceflow.core.avro import IpCount
from onceflow.testing.coordinator.cluster import SINKS, Row, TwoPhaseCommitCluster

from .conftest import ClusterFactory
from .driver import ABORTED, ABORTING, COMMITTED, COMMITTING, JOB, PREPARING, W0, WINDOW_MS, batch_rows, expected_rows

pytestmark = pytest.mark.slow

TXNS = int(os.environ.get("ONCEFLOW_SOAK_TXNS", "1000"))
DEADLINE_S = 600.0
#: The chaos loop lets the cluster commit this many batches between two kills (or waits
#: ``PROGRESS_WAIT_S`` at most): a process takes about 2 s to restart here, so without it a
#: slow machine spends most of the soak restarting and the run length depends on its speed.
PROGRESS_BATCHES = 20
PROGRESS_WAIT_S = 10.0
UNDECIDED = [PREPARING, COMMITTING, ABORTING]


def batches_of(rows: Iterable[Row]) -> list[int]:
    """The batches ``rows`` belong to (each batch has its own window, see :func:`batch_rows`)."""
    return sorted({(row[0] - W0) // WINDOW_MS for row in rows})


@dataclass
class DriverStats:
    calls: int = 0
    committed: int = 0
    committing: int = 0
    aborted: int = 0
    registrations: int = 0
    errors: Counter[str] = field(default_factory=Counter)


class Driver:
    """Commits batches 0..n-1 as a Spark driver would, whatever happens to the processes around it.

    UNAVAILABLE or another error: retry the same batch (re-registering after FAILED_PRECONDITION or
    NOT_FOUND). ABORTED: retry the batch (Spark re-runs it). COMMITTED or COMMITTING: next batch.
    """

    def __init__(self, cluster: TwoPhaseCommitCluster, rng: random.Random) -> None:
        self.cluster = cluster
        self.rng = rng
        self.stats = DriverStats()
        self.rows: dict[int, list[IpCount]] = {}
        self._epoch: int | None = None

    def run(self, batches: int, deadline: float) -> None:
        for batch in range(batches):
            self.rows[batch] = batch_rows(batch, self.rng.randint(5, 20))
            files = self.cluster.stage(JOB, batch, self.rows[batch])
            while not self._commit(batch, files):
                if time.monotonic() > deadline:
                    raise AssertionError(f"batch {batch} not committed in time: {self.stats}")
                time.sleep(0.02)

    def _commit(self, batch: int, files: list[StagedFile]) -> bool:
        self.stats.calls += 1
        try:
            if self._epoch is None:
                self._epoch = self.cluster.register(JOB, "soak-driver", timeout=10)
                self.stats.registrations += 1
            response = self.cluster.commit(JOB, self._epoch, batch, files, timeout=30)
        except RpcFailed as exc:
            code = exc.code()
            self.stats.errors[code.name] += 1
            if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                self._epoch = None
            return False
        if response.state == COMMITTING:
            self.stats.committing += 1
        if response.state in (COMMITTED, COMMITTING):
            self.stats.committed += 1
            return True
        assert response.state == ABORTED, response
        self.stats.aborted += 1
        return False


class Chaos:
    """Until stopped: ``kill -9`` the coordinator, one participant, or both, then restart them; again
    after 0.5-2.5 s once the driver committed ``PROGRESS_BATCHES`` more batches.

    The first four kills cover every process once (in random order); later victims are random.
    """

    def __init__(self, cluster: TwoPhaseCommitCluster, rng: random.Random, stats: DriverStats) -> None:
        self.cluster = cluster
        self.stats = stats
        self.rng = rng
        self.kills: Counter[str] = Counter()
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)

    def _run(self) -> None:
        processes = ["coordinator", *SINKS]
        first_round = self.rng.sample(processes, len(processes))
        try:
            while not self._stop.wait(self.rng.uniform(0.5, 2.5)):
                self._wait_for_progress()
                if first_round:
                    victims = [first_round.pop()]
                elif self.rng.random() < 0.2:
                    victims = ["coordinator", self.rng.choice(SINKS)]
                else:
                    victims = [self.rng.choice(processes)]
                self._kill_and_restart(victims)
        except BaseException as exc:
            self.failure = exc

    def _wait_for_progress(self) -> None:
        target = self.stats.committed + PROGRESS_BATCHES
        deadline = time.monotonic() + PROGRESS_WAIT_S
        while self.stats.committed < target and time.monotonic() < deadline and not self._stop.wait(0.05):
            pass

    def _kill_and_restart(self, victims: list[str]) -> None:
        cluster = self.cluster
        for victim in victims:
            (cluster.coordinator if victim == "coordinator" else cluster.participants[victim]).kill()
            self.kills[victim] += 1
        time.sleep(self.rng.uniform(0.0, 0.5))
        # A participant recovers (and only then listens) once the coordinator answers: start it
        # first, bring the coordinator up, then wait for the participant.
        for victim in victims:
            if victim != "coordinator":
                cluster.participants[victim].start(wait=False)
        if "coordinator" in victims:
            cluster.coordinator.start()
        for victim in victims:
            if victim != "coordinator":
                cluster.participants[victim].wait_ready()


def test_soak_1000_transactions_under_random_kill_9(cluster_factory: ClusterFactory) -> None:
    """Steps:
    1. Start the cluster: broker, PostgreSQL, coordinator and the three participant processes,
       with short timeouts (a commit answers COMMITTING after 2 s without every ack).
    2. The driver commits 1,000 batches of 5-20 rows while the chaos loop kills and restarts the
       coordinator and the participants at random (letting a few batches commit between kills).
    3. Stop the chaos; wait until the coordinator has no undecided transaction left.
    4. The coordinator reports every batch COMMITTED (GetTransaction per batch, ListTransactions).
    5. Every sink holds exactly the rows of the COMMITTED batches, row for row: Kafka read
       with read_committed (no duplicate, no loss), SQLite and PostgreSQL tables, and their
       commits tables list each committed batch once. Nothing is left prepared anywhere.
    """
    seed = int(os.environ.get("ONCEFLOW_SOAK_SEED", str(random.randrange(1 << 32))))
    sys.stderr.write(f"\nsoak seed {seed} (ONCEFLOW_SOAK_SEED={seed} replays the choices)\n")
    rng = random.Random(seed)
    # Step 1
    cluster = cluster_factory(
        coordinator_settings={
            "prepare_timeout_ms": 5_000,
            "commit_wait_ms": 2_000,
            "commit_retry": {"initial_backoff_ms": 50, "max_backoff_ms": 300, "call_timeout_ms": 2_000},
            "log": {"level": "WARNING"},
        },
        participant_log_level="WARNING",
    )
    driver = Driver(cluster, random.Random(rng.random()))
    chaos = Chaos(cluster, random.Random(rng.random()), driver.stats)
    # Step 2
    started = time.monotonic()
    chaos.start()
    try:
        driver.run(TXNS, started + DEADLINE_S)
    finally:
        chaos.stop()
    elapsed = time.monotonic() - started
    sys.stderr.write(f"soak: {TXNS} txns in {elapsed:.1f}s, kills {dict(chaos.kills)}, driver {driver.stats}\n")
    assert chaos.failure is None, f"chaos loop failed: {chaos.failure!r}"
    assert sum(chaos.kills.values()) >= 10 and set(chaos.kills) == {"coordinator", *SINKS}, chaos.kills
    # Step 3
    deadline = time.monotonic() + 60
    while True:
        undecided = cluster.client.list_transactions(JOB, UNDECIDED, 1000, timeout_s=10)
        if not undecided:
            break
        assert time.monotonic() < deadline, f"still undecided: {[(t.id.batch, t.state) for t in undecided]}"
        time.sleep(0.2)
    # Step 4
    states = {batch: cluster.transaction(JOB, batch).state for batch in range(TXNS)}
    committed = sorted(batch for batch, state in states.items() if state == COMMITTED)
    assert committed == list(range(TXNS)), {b: s for b, s in states.items() if s != COMMITTED}
    listed = cluster.client.list_transactions(JOB, [COMMITTED], 1000, timeout_s=10)
    assert len(listed) == min(TXNS, 1000)
    # Step 5
    expected = expected_rows(driver.rows[batch] for batch in committed)
    for sink, rows in cluster.sink_rows().items():
        if rows != expected:
            missing, extra = Counter(expected) - Counter(rows), Counter(rows) - Counter(expected)
            raise AssertionError(
                f"{sink}: {sum(missing.values())} rows missing (batches {batches_of(missing)}), "
                f"{sum(extra.values())} extra or duplicated (batches {batches_of(extra)})"
            )
    assert cluster.committed_batches(JOB) == {"sqlite": committed, "postgres": committed}
    assert cluster.prepared() == {"sqlite": [], "postgres": [], "kafka": []}
