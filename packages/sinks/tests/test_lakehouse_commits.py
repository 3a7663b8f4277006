"""What makes a lakehouse commit exactly once: the batch recorded in the table and checked on the
version the commit lands on, conflicts with other writers retried, a commit interrupted after the
table commit acknowledged on replay, and every table version a batch boundary (time travel)."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from onceflow.contract import Resolution, Shard, TransactionId
from onceflow.core.faults import FaultInjector
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA
from onceflow.sinks.delta.format import DeltaFormat
from onceflow.sinks.iceberg.format import IcebergFormat
from onceflow.sinks.lakehouse.open import open_participant
from onceflow.sinks.lakehouse.participant import LakehouseParticipant

from .conftest import W0, W1, Stage, bound, row
from .lakehouse import KINDS, lakehouse_options, open_lakehouse


class Once(FaultInjector):
    """Runs ``action`` the first time the participant reaches ``point``."""

    def __init__(self, point: str, action: Callable[[], None]) -> None:
        self.point = point
        self.action = action
        self.fired = 0

    def at(self, point: str, **ids: object) -> None:
        if point == self.point and not self.fired:
            self.fired += 1
            self.action()


class CrashError(Exception):
    """Stands for the process dying at a fault point (the twopc suite does it with a real kill -9)."""


class CrashAt(FaultInjector):
    def __init__(self, point: str) -> None:
        self.point = point

    def at(self, point: str, **ids: object) -> None:
        if point == self.point:
            raise CrashError(point)


def _held(sink: LakehouseParticipant, table: str = "ip_counts") -> list[tuple[int, str, int]]:
    rows = sink.format.read(table)
    assert rows is not None
    return sorted((r["window_start"], r["ip"], r["count"]) for r in rows.to_pylist())


def _foreign_append(sink: LakehouseParticipant, ip: str) -> None:
    """Another writer (not onceflow) appends one row to ``ip_counts`` with the format's own library."""
    rows = pa.Table.from_pylist([dict(window_start=W1, window_end=W1 + 5_000, ip=ip, count=100)], IP_COUNT_ARROW_SCHEMA)
    if isinstance(sink.format, DeltaFormat):
        from deltalake import write_deltalake

        write_deltalake(sink.format.store.table_uri("ip_counts"), rows, mode="append")
    else:
        assert isinstance(sink.format, IcebergFormat)
        table = sink.format.open("ip_counts")
        assert table is not None
        table.append(rows)


def _foreign_appends(sink: LakehouseParticipant, *ips: str) -> None:
    for ip in ips:
        _foreign_append(sink, ip)


@pytest.mark.parametrize("kind", KINDS)
def test_another_writer_committing_in_between_is_retried_never_lost(tmp_path: Path, stage: Stage, kind: str) -> None:
    """Steps:
    1. Batch 0 (upsert) is prepared; right before its table commit another writer appends a row.
    2. The commit conflicts (or, for a Delta blind append, delta-rs rebases it) and is retried on the
       new version: the table holds the other writer's row and the batch, once.
    3. The same for batch 1 when the other writer commits twice in a row.
    """
    sink = open_lakehouse(kind, tmp_path)
    try:
        # Step 1
        sink.faults = Once("before-table-commit", lambda: _foreign_append(sink, "other-1"))
        sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1), row("b", 2)]), bound(sink))
        # Step 2
        sink.commit(TransactionId("job", 0))
        assert _held(sink) == [(W0, "a", 1), (W0, "b", 2), (W1, "other-1", 100)]
        assert sink.last_committed("ip_counts", "job") == 0
        # Step 3
        sink.faults = Once("before-table-commit", lambda: _foreign_appends(sink, "x", "y"))
        sink.prepare(TransactionId("job", 1), stage("job", 1, [row("a", 5)]), bound(sink))
        sink.commit(TransactionId("job", 1))
        assert _held(sink) == [(W0, "a", 5), (W0, "b", 2), (W1, "other-1", 100), (W1, "x", 100), (W1, "y", 100)]
    finally:
        sink.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_racing_commit_of_the_same_batch_is_acknowledged_not_written_twice(
    tmp_path: Path, stage: Stage, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Steps:
    1. Batch 0 is prepared; a second participant instance on the same journal (a zombie, or a
       re-sent Commit racing the first) commits it right before this one's table commit.
    2. This commit, made on the version it read, conflicts; its retry reads the batch in the
       table and acknowledges it. The rows are there once.
    """
    caplog.set_level(logging.INFO)
    sink = open_lakehouse(kind, tmp_path)
    zombie = open_lakehouse(kind, tmp_path)
    try:
        # Step 1
        sink.faults = Once("before-table-commit", lambda: zombie.commit(TransactionId("job", 0)))
        sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1), row("b", 2)]), bound(sink))
        # Step 2
        sink.commit(TransactionId("job", 0))
        assert _held(sink) == [(W0, "a", 1), (W0, "b", 2)]
        assert sink.list_prepared() == []
        versions = [txn for _, txn in sink.format.history("ip_counts") if txn is not None]
        assert versions == ["job:0"]
        events = [r.getMessage().split()[0] for r in caplog.records if r.getMessage().startswith("commit.")]
        assert events[-3:] == ["commit.conflict", "commit.table_holds_batch", "commit.done"], events
    finally:
        zombie.close()
        sink.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("point", ["prepare-midway", "prepare-durable", "commit-midway"])
def test_a_participant_dying_at_each_step_recovers_exactly_once(
    tmp_path: Path, stage: Stage, kind: str, point: str
) -> None:
    """Steps:
    1. Batch 0 commits; batch 1 dies at ``point`` (:mod:`onceflow.testing.faults.participant`): after writing
       its data files (no journal entry: no yes vote, the coordinator presumes abort), after
       journaling them (a yes vote: the servicer's ``prepare-durable``), or after the table commit
       but before the journal entry is dropped.
    2. A new participant recovers with the coordinator's decision (abort before a yes vote, commit after).
    3. The table holds batch 1 once if it was committed, not at all otherwise; nothing stays prepared,
       and a replayed Commit is acknowledged.
    """
    sink = open_lakehouse(kind, tmp_path)
    sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink))
    sink.commit(TransactionId("job", 0))
    # Step 1
    sink.faults = CrashAt(point)
    files = stage("job", 1, [row("a", 2), row("b", 3)])
    with pytest.raises(CrashError):
        sink.prepare(TransactionId("job", 1), files, bound(sink))
        if point == "prepare-durable":  # the servicer's point, once the sink's prepare returned
            raise CrashError(point)
        sink.commit(TransactionId("job", 1))
    sink.close()
    # Step 2
    voted_yes = point != "prepare-midway"
    reopened = open_lakehouse(kind, tmp_path)
    try:
        assert reopened.list_prepared() == ([TransactionId("job", 1)] if voted_yes else [])
        reopened.recover(lambda txn: Resolution.COMMIT if voted_yes else Resolution.ABORT)
        # Step 3
        expected = [(W0, "a", 2), (W0, "b", 3)] if voted_yes else [(W0, "a", 1)]
        assert _held(reopened) == expected
        assert reopened.list_prepared() == []
        if voted_yes:
            reopened.commit(TransactionId("job", 1), files, bound(reopened))
            assert _held(reopened) == expected
    finally:
        reopened.close()


@pytest.mark.parametrize("kind", KINDS)
def test_every_table_version_is_a_committed_batch_boundary(tmp_path: Path, stage: Stage, kind: str) -> None:
    """Time travel: each version onceflow committed reads exactly the rows after its batch; versions it
    did not commit (creation, schema changes) read the rows of the batch before them."""
    sink = open_lakehouse(kind, tmp_path)
    batches = [[row("a", 1), row("b", 1)], [row("a", 2)], [], [row("c", 1, W1), row("b", 5)]]
    expected: dict[str, list[tuple[int, str, int]]] = {}
    state: dict[tuple[int, str], int] = {}
    try:
        for batch, rows in enumerate(batches):
            txn = TransactionId("job", batch)
            assert sink.prepare(txn, stage("job", batch, rows) if rows else [], bound(sink)).vote_commit
            sink.commit(txn)
            state.update({(r["window_start"], r["ip"]): r["count"] for r in rows})
            expected[str(txn)] = sorted((ws, ip, n) for (ws, ip), n in state.items())
        history = sink.format.history("ip_counts")
        assert [txn for _, txn in history if txn] == [f"job:{b}" for b in range(len(batches))]
        boundary: list[tuple[int, str, int]] = []
        for version, committed in history:
            boundary = expected[committed] if committed else boundary
            assert _read_version(sink, version) == boundary, f"version {version} ({committed or 'not a batch'})"
    finally:
        sink.close()


def _read_version(sink: LakehouseParticipant, version: int) -> list[tuple[int, str, int]]:
    held = sink.format.read("ip_counts", version)
    assert held is not None
    return sorted((r["window_start"], r["ip"], r["count"]) for r in held.to_pylist())


def test_delta_commit_carries_the_application_transaction(tmp_path: Path, stage: Stage) -> None:
    """Delta's own idempotency record: the ``txn`` action with appId = the job, version = the batch."""
    sink = open_lakehouse("delta", tmp_path)
    try:
        for batch in range(3):
            sink.prepare(TransactionId("ip-count", batch), stage("ip-count", batch, [row("a", batch)]), bound(sink))
            sink.commit(TransactionId("ip-count", batch))
        assert isinstance(sink.format, DeltaFormat)
        delta = sink.format.open("ip_counts")
        assert delta is not None
        assert delta.transaction_version("ip-count") == 2
        assert delta.transaction_version("another-job") is None
    finally:
        sink.close()


def _compact(sink: LakehouseParticipant) -> None:
    """What a maintenance job does outside the job: rewrite the table's data files into one and drop
    what no version needs (Delta OPTIMIZE + VACUUM; an Iceberg rewrite + expire_snapshots)."""
    if isinstance(sink.format, DeltaFormat):
        delta = sink.format.open("ip_counts")
        assert delta is not None
        delta.optimize.compact()
        delta.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        return
    assert isinstance(sink.format, IcebergFormat)
    table = sink.format.open("ip_counts")
    assert table is not None
    table.overwrite(table.scan().to_arrow())
    table.maintenance.expire_snapshots().older_than(datetime.datetime.now(datetime.UTC)).commit()


def _live_files(sink: LakehouseParticipant) -> int:
    if isinstance(sink.format, DeltaFormat):
        delta = sink.format.open("ip_counts")
        assert delta is not None
        return len(delta.file_uris())
    assert isinstance(sink.format, IcebergFormat)
    table = sink.format.open("ip_counts")
    assert table is not None
    return len(list(table.scan().plan_files()))


@pytest.mark.parametrize("kind", KINDS)
def test_compaction_outside_the_job_keeps_every_batch_exactly_once(tmp_path: Path, stage: Stage, kind: str) -> None:
    """Steps:
    1. Three batches commit: small data files (one per batch, fewer where a merge rewrote one).
    2. A maintenance job compacts the table into one file and drops the old versions.
    3. Batch 2 is committed again from its staged files (a replay): the table still knows it holds
       the batch, so nothing is written twice.
    4. Batch 3 commits while another compaction runs right before its table commit: it conflicts
       (or is rebased by delta-rs), is retried, and lands once.
    """
    sink = open_lakehouse(kind, tmp_path)
    try:
        # Step 1
        batches = [[row("a", 1), row("b", 1)], [row("c", 1, W1)], [row("a", 3)]]
        staged = [stage("job", b, rows) for b, rows in enumerate(batches)]
        for batch, files in enumerate(staged):
            sink.prepare(TransactionId("job", batch), files, bound(sink))
            sink.commit(TransactionId("job", batch))
        assert _live_files(sink) > 1  # a file per batch, or fewer where a merge rewrote one
        expected = [(W0, "a", 3), (W0, "b", 1), (W1, "c", 1)]
        # Step 2
        _compact(sink)
        assert _live_files(sink) == 1
        assert _held(sink) == expected
        # Step 3
        sink.commit(TransactionId("job", 2), staged[2], bound(sink))
        assert _held(sink) == expected
        # Step 4
        sink.faults = Once("before-table-commit", lambda: _compact(sink))
        sink.prepare(TransactionId("job", 3), stage("job", 3, [row("b", 7)]), bound(sink))
        sink.commit(TransactionId("job", 3))
        assert _held(sink) == [(W0, "a", 3), (W0, "b", 7), (W1, "c", 1)]
        assert sink.last_committed("ip_counts", "job") == 3
    finally:
        sink.close()


@pytest.mark.parametrize("kind", KINDS)
def test_two_shards_commit_their_shares_to_one_table(tmp_path: Path, stage: Stage, kind: str) -> None:
    """Two shards of one sink split an upsert batch by key and commit their shares to the same table,
    each under its own application id (``<job>#<index>``): every row lands once, and a replay of
    either shard is acknowledged."""
    options = lakehouse_options(kind, tmp_path)
    shards = [open_participant("lake", options, shard=Shard(i, 2)) for i in range(2)]
    try:
        rows = [row(f"10.0.0.{i}", i) for i in range(20)]
        files = stage("job", 0, rows)
        held = [sink.prepare(TransactionId("job", 0), files, bound(sink)).rows for sink in shards]
        assert sum(held) == 20 and all(held)
        for sink in shards:
            sink.commit(TransactionId("job", 0))
        for sink in shards:
            sink.commit(TransactionId("job", 0), files, bound(sink))  # a re-sent Commit: acknowledged
        assert _held(shards[0]) == sorted((W0, f"10.0.0.{i}", i) for i in range(20))
        assert [sink.last_committed("ip_counts", f"job#{i}") for i, sink in enumerate(shards)] == [0, 0]
        assert shards[0].last_committed("ip_counts", "job") == -1
    finally:
        for sink in shards:
            sink.close()
