"""Sinks served by several participant processes (shards), with real processes and real ``kill -9``.

One cluster for the module: a coordinator and two participant processes per sink (``kafka#0``,
``kafka#1``, ``sqlite#0``, ... ), the SQLite shards sharing one database file. Each test is a job of
its own writing tables and topics of its own, so each checks its sinks exactly:

- a batch split over the two shards of every kind, by key (the default IP-count bindings, and the
  SQLite binding: upsert) and by file (the Kafka and PostgreSQL bindings: append);
- a ``kill -9`` of one shard of every sink at each step of the protocol, each ending with every
  sink exact (crash points of :mod:`onceflow.testing.faults.participant`; the variants beyond one before and
  one after the vote are marked slow);
- a participant started with the wrong shard count, refused when the job registers.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.contract import SinkBinding, SinkMode, TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.core.avro import IpCount
from onceflow.ipcount.schema import ip_count_table_binding, ip_count_topic_binding
from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster, running_cluster
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.participant import CRASH_ENV
from onceflow.testing.sinks.postgres import PostgresServer
from onceflow.testing.sinks.process import ParticipantProcess

from .driver import ABORTED, COMMITTED, COMMITTING, batch_rows, expected_rows

SHARDS = {sink: 2 for sink in SINKS}
#: The shard of each sink that the kill tests crash.
VICTIMS = ("kafka#1", "sqlite#0", "postgres#1")
ROWS = 40
FILES = 4


@pytest.fixture(scope="module")
def sharded(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[TwoPhaseCommitCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("shards"),
        postgres_server,
        shards=SHARDS,
        coordinator_settings={"commit_wait_ms": 1_000, "prepare_timeout_ms": 30_000},
    ) as cluster:
        yield cluster


@pytest.fixture(autouse=True)
def _logs_on_failure(sharded: TwoPhaseCommitCluster, request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        sys.stderr.write(f"\n{sharded.logs(80)}\n")


def bindings(tag: str) -> dict[str, list[SinkBinding]]:
    """The job's own table or topic in every sink: Kafka and PostgreSQL append (split by file), SQLite
    upsert on (window_start, ip) (split by key)."""
    name = f"shards_{tag}"
    return {
        "kafka": [ip_count_topic_binding("kafka", name, SinkMode.APPEND)],
        "sqlite": [ip_count_table_binding("sqlite", name)],
        "postgres": [ip_count_table_binding("postgres", name, SinkMode.APPEND)],
    }


def stage(cluster: TwoPhaseCommitCluster, job: str, rows: list[IpCount]) -> list[StagedFile]:
    """``rows`` staged as :data:`FILES` files of different sizes, as a batch's Spark tasks would."""
    cuts = [0, 4, 12, 24, len(rows)]
    return cluster.stage(job, 0, *(rows[a:b] for a, b in itertools.pairwise(cuts)))


def vote(process: ParticipantProcess, job: str) -> tuple[int, int]:
    """``(files, rows)`` of the participant's yes vote for ``job``'s batch 0, from its log."""
    found = re.findall(
        rf"prepare\.vote_yes .*job={re.escape(job)} batch=0 .*files=(\d+) rows=(\d+)", process.log_tail(400)
    )
    assert found, f"no yes vote for {job}:0 in\n{process.log_tail(40)}"
    files, rows = found[-1]
    return int(files), int(rows)


def assert_exact(cluster: TwoPhaseCommitCluster, job: str, tag: str, rows: list[IpCount]) -> None:
    """Every sink holds ``rows`` exactly once, every shard recorded batch 0 once, nothing is prepared."""
    expected = expected_rows([rows])
    for binding in (b for group in bindings(tag).values() for b in group):
        assert cluster.rows_of(binding) == expected, binding.describe()
    assert cluster.last_committed(job) == dict.fromkeys(SINKS, 0)
    assert cluster.committed_batches(job) == {
        name: [0] for name in ("sqlite#0", "sqlite#1", "postgres#0", "postgres#1")
    }
    assert all(not held for held in cluster.prepared().values()), cluster.prepared()


def test_a_batch_is_split_over_two_shards_of_each_kind(sharded: TwoPhaseCommitCluster) -> None:
    """Steps:
    1. Default bindings (the IP-count results, upsert by key): every shard reads the batch's 4 files
       and writes the keys it owns; the shards of each sink write all 40 rows between them, each some.
    2. Own bindings: the Kafka and PostgreSQL shards (append) get 2 files each, the SQLite shards
       (upsert) all 4. Every sink holds every row once.
    3. The votes are named per shard, each shard recorded its own commit, and the readers see each
       sink whole: batch 0 committed.
    """
    # Step 1
    rows = batch_rows(0, ROWS)
    epoch = sharded.register("by-key")
    assert sharded.commit("by-key", epoch, 0, stage(sharded, "by-key", rows)).state == COMMITTED
    for sink in SINKS:
        votes = [vote(process, "by-key") for process in sharded.processes_of(sink)]
        assert all(files == FILES and 0 < count < ROWS for files, count in votes), (sink, votes)
        assert sum(count for _, count in votes) == ROWS, (sink, votes)
    assert sharded.sink_rows() == dict.fromkeys(SINKS, expected_rows([rows]))
    # Step 2
    epoch = sharded.register("mixed", bindings=bindings("mixed"))
    assert sharded.commit("mixed", epoch, 0, stage(sharded, "mixed", rows)).state == COMMITTED
    shares = {name: vote(process, "mixed") for name, process in sharded.participants.items()}
    assert {name: files for name, (files, _) in shares.items()} == {
        "kafka#0": 2,
        "kafka#1": 2,
        "sqlite#0": 4,
        "sqlite#1": 4,
        "postgres#0": 2,
        "postgres#1": 2,
    }
    assert shares["kafka#0"][1] + shares["kafka#1"][1] == ROWS
    # Step 3
    txn = sharded.transaction("mixed", 0)
    assert sorted((p.sink, p.prepared, p.acknowledged) for p in txn.votes) == [
        (name, True, True) for name in sorted(sharded.participants)
    ]
    assert_exact(sharded, "mixed", "mixed", rows)
    assert sharded.last_committed("by-key") == dict.fromkeys(SINKS, 0)


def _crash_victims_at(cluster: TwoPhaseCommitCluster, point: str) -> list[ParticipantProcess]:
    victims = [cluster.participants[name] for name in VICTIMS]
    for process in victims:
        process.kill()  # between batches: nothing in flight, and a crash is what a participant is built for
        process.env[CRASH_ENV] = point
        process.start(wait=False)
    for process in victims:
        process.wait_ready()
    return victims


def _restart(victims: list[ParticipantProcess]) -> None:
    """The crashed shards come back (without the crash point), recover, and serve."""
    for process in victims:
        assert process.wait(20) == CRASH_EXIT_CODE, process.log_tail(20)
        del process.env[CRASH_ENV]
        process.start(wait=False)
    for process in victims:
        process.wait_ready()


def _commit_until_decided(
    cluster: TwoPhaseCommitCluster, job: str, epoch: int, files: list[StagedFile]
) -> TransactionState:
    """The driver's retry: ABORTED or UNAVAILABLE (a channel reconnecting to a restarted shard) again."""
    for _ in range(50):
        try:
            state = cluster.commit(job, epoch, 0, files).state
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            continue
        if state != ABORTED:
            return state
    raise AssertionError(f"{job}:0 still aborted after 50 attempts\n{cluster.logs()}")


@pytest.mark.parametrize("point", ["prepare-received", pytest.param("prepare-durable", marks=pytest.mark.slow)])
def test_a_shard_killed_before_its_vote_aborts_the_batch_in_every_shard(
    sharded: TwoPhaseCommitCluster, point: str
) -> None:
    """Steps:
    1. One shard of every sink is ``kill -9``-ed when the Prepare arrives (``prepare-received``), or
       once its prepared state is durable but before its yes vote is sent (``prepare-durable``).
    2. The batch aborts everywhere: the reason names the shards that did not vote, no sink holds a
       row of it, and the other shards hold nothing prepared.
    3. The killed shards restart (a durable prepared state is resolved with the coordinator: presumed
       abort) and the driver's retry commits: every sink is exact.
    """
    job, tag = f"kill-{point}", point.replace("-", "_")
    epoch = sharded.register(job, bindings=bindings(tag))
    # Step 1
    victims = _crash_victims_at(sharded, point)
    rows = batch_rows(0, ROWS)
    files = stage(sharded, job, rows)
    response = sharded.commit(job, epoch, 0, files)
    # Step 2
    assert response.state == ABORTED
    assert all(f"participant {name!r} did not vote" in response.reason for name in VICTIMS), response.reason
    for binding in (b for group in bindings(tag).values() for b in group):
        assert sharded.rows_of(binding) == [], binding.describe()
    held = sharded.prepared()
    assert all(not held[name] for name in sharded.participants if name not in VICTIMS), held
    if point == "prepare-durable":
        assert all(held[name] for name in VICTIMS), held
    # Step 3
    _restart(victims)
    assert _commit_until_decided(sharded, job, epoch, files) in (COMMITTED, COMMITTING)
    sharded.wait_for_state(job, 0, COMMITTED)
    assert_exact(sharded, job, tag, rows)


@pytest.mark.parametrize(
    "point",
    [
        "commit-received",
        pytest.param("commit-midway", marks=pytest.mark.slow),
        pytest.param("commit-applied", marks=pytest.mark.slow),
    ],
)
def test_a_shard_killed_after_voting_yes_commits_its_share_when_it_recovers(
    sharded: TwoPhaseCommitCluster, point: str
) -> None:
    """Steps:
    1. One shard of every sink is ``kill -9``-ed after voting yes: when the Commit arrives
       (``commit-received``), inside its commit (``commit-midway``: Kafka committed but its journal
       not cleared, SQLite's rows written but not committed, PostgreSQL before ``COMMIT PREPARED``),
       or after its commit, before the acknowledgement (``commit-applied``).
    2. The decision is COMMIT: the driver hears COMMITTING, the other shards ack, the killed ones
       are retried.
    3. The killed shards restart, recover (their prepared batch committed with the decision, or
       found committed already) and the coordinator's re-sent Commit is acked: COMMITTED, and every
       sink holds every row exactly once.
    """
    job, tag = f"kill-{point}", point.replace("-", "_")
    epoch = sharded.register(job, bindings=bindings(tag))
    # Step 1
    victims = _crash_victims_at(sharded, point)
    rows = batch_rows(0, ROWS)
    files = stage(sharded, job, rows)
    # Step 2
    assert sharded.commit(job, epoch, 0, files).state == COMMITTING
    for process in victims:
        assert process.wait(20) == CRASH_EXIT_CODE
    txn = sharded.transaction(job, 0)
    acked = {p.sink: p.acknowledged for p in txn.votes}
    assert acked == {name: name not in VICTIMS for name in sharded.participants}, acked
    _assert_state_of_the_killed(sharded, job, tag, point, expected_rows([rows]))
    # Step 3
    _restart(victims)
    sharded.wait_for_state(job, 0, COMMITTED)
    assert_exact(sharded, job, tag, rows)


def _assert_state_of_the_killed(
    cluster: TwoPhaseCommitCluster, job: str, tag: str, point: str, expected: list[tuple[int, int, str, int]]
) -> None:
    """What the killed shards left, by the step they died at (before any of them restarts)."""
    held = cluster.prepared()
    assert all(not held[name] for name in cluster.participants if name not in VICTIMS), held
    by_sink = {sink: group[0] for sink, group in bindings(tag).items()}
    if point == "commit-received":  # prepared, nothing of the victims' shares visible
        assert all(
            held[name] == ([f"onceflow:{name}:{job}:0"] if name.startswith("postgres") else [f"{job}:0"])
            for name in VICTIMS
        ), held
        assert all(len(cluster.rows_of(binding)) < len(expected) for binding in by_sink.values())
    elif point == "commit-midway":  # Kafka's transaction committed, its journal entry left; the others prepared
        assert cluster.rows_of(by_sink["kafka"]) == expected
        assert all(held[name] for name in VICTIMS), held
        assert len(cluster.rows_of(by_sink["sqlite"])) < len(expected)
    else:  # committed everywhere, only the acknowledgements are missing
        assert all(not held[name] for name in VICTIMS), held
        assert all(cluster.rows_of(binding) == expected for binding in by_sink.values())


def test_a_participant_started_with_the_wrong_shard_count_is_refused(
    sharded: TwoPhaseCommitCluster, tmp_path: Path
) -> None:
    """A second process for shard 1 of ``sqlite``, started with ``shards = 3`` while the sink has 2: the
    job that registers it as shard 1 of 2 is refused before any batch, naming the shard and both counts."""
    settings = sharded.participant_settings("sqlite", 1)
    settings["sinks"][0]["shards"] = 3
    with ParticipantProcess(tmp_path / "wrong", settings) as wrong:
        refs = [
            ref if ref.name != "sqlite#1" else type(ref)(ref.sink, wrong.target, ref.bindings, ref.shard)
            for ref in sharded.refs
        ]
        epoch = int(sharded.client.register_writer("wrong-count", "driver").epoch)
        with pytest.raises(grpc.RpcError) as refused:
            sharded.client.register_participants("wrong-count", epoch, refs)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    details = str(refused.value.details())
    assert f"participant 'sqlite#1' at {wrong.target} refused the job's bindings" in details
    assert "this participant serves shard 1 of 3" in details and "addressed shard 1 of 2" in details
