"""A sink served by several participant processes (shards): registered as one ref per shard, each
shard prepared and committed with its share of the files (the same share after a restart), each voting
in the one transaction under its own name, and registrations that cannot be split refused."""

from __future__ import annotations

import re
import time
from dataclasses import replace

import pytest

from onceflow.contract import ParticipantRef, Shard, SinkBinding, SinkMode, TransactionId, TransactionState
from onceflow.contract.proto import shard_to_proto
from onceflow.coordinator.convert import participants_from_proto
from onceflow.coordinator.engine import TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import InvalidRequest
from onceflow.coordinator.log import MemoryLogStorage
from onceflow.coordinator.log.records import decode, encode
from onceflow.coordinator.model import JobState
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA
from onceflow.proto.v1 import common_pb2, coordinator_pb2
from onceflow.testing.coordinator import FakeParticipants, staged_files

from .conftest import JOB, EngineFactory

APPEND = SinkBinding("kafka", output="results", topic="hits", mode=SinkMode.APPEND, schema=IP_COUNT_ARROW_SCHEMA)


@pytest.fixture
def fakes() -> FakeParticipants:
    """``kafka`` served by two shards, ``sqlite`` by one process (the engines of this module use these)."""
    fakes = FakeParticipants(["sqlite"])
    fakes.add_shards("kafka", 2)
    return fakes


def _register(engine: TwoPhaseCommitEngine, refs: list[ParticipantRef]) -> int:
    epoch = engine.register_writer(JOB, "driver").epoch
    engine.register_participants(JOB, epoch, refs)
    return epoch


def test_each_shard_prepares_and_commits_its_share_under_its_own_name(
    engine_factory: EngineFactory, fakes: FakeParticipants, storage: MemoryLogStorage
) -> None:
    """Steps:
    1. Register ``kafka`` (2 shards, append: split by file) and ``sqlite``; every shard is asked to check
       its shard and bindings at registration.
    2. Commit a batch of 4 files: each shard prepares and commits 2 of them, sqlite all 4; the votes are
       named ``kafka#0``, ``kafka#1`` and ``sqlite``.
    3. A restarted coordinator logged the refs with their shards: a batch committed after the restart
       gives each shard the same share again.
    """
    engine = engine_factory()
    refs = [replace(ref, bindings=(APPEND,)) if ref.sink == "kafka" else ref for ref in fakes.refs]
    # Step 1
    epoch = _register(engine, refs)
    assert [seen[0] for seen in fakes["kafka#0"].bindings_seen] == ["prepare_bindings"]
    # Step 2
    files = staged_files(JOB, 0, files=4, rows=10)
    assert engine.commit_transaction(JOB, epoch, 0, files).state is TransactionState.COMMITTED
    txn = TransactionId(JOB, 0)
    shares = [set(fakes[f"kafka#{i}"].files_seen[txn]) for i in range(2)]
    assert [len(share) for share in shares] == [2, 2]
    assert shares[0] | shares[1] == set(files) and not shares[0] & shares[1]
    assert [set(fakes[f"kafka#{i}"].commit_files[txn]) for i in range(2)] == shares
    assert fakes["sqlite"].files_seen[txn] == tuple(files)
    votes = engine.get_transaction(JOB, 0).votes
    assert [(v.sink, v.prepared, v.acknowledged) for v in votes] == [
        ("sqlite", True, True),
        ("kafka#0", True, True),
        ("kafka#1", True, True),
    ]
    # Step 3
    engine.close()
    again = engine_factory()
    assert again.commit_transaction(JOB, epoch, 1, files).state is TransactionState.COMMITTED
    assert [set(fakes[f"kafka#{i}"].files_seen[TransactionId(JOB, 1)]) for i in range(2)] == shares


def test_a_shard_that_votes_no_aborts_the_batch_in_every_shard(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants
) -> None:
    epoch = _register(engine, fakes.refs)
    fakes["kafka#1"].vote_no = "disk full"
    outcome = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    assert outcome.state is TransactionState.ABORTED
    assert outcome.reason == "participant 'kafka#1' voted no: disk full"
    txn = TransactionId(JOB, 0)
    for name in ("kafka#0", "kafka#1", "sqlite"):
        assert fakes[name].aborted == {txn: 1}, name
        assert fakes[name].count("commit") == 0, name


def test_keyed_bindings_give_every_shard_every_file(engine: TwoPhaseCommitEngine, fakes: FakeParticipants) -> None:
    """Default bindings (the IP-count results, upsert by key): every shard reads every file, keeps its keys."""
    epoch = _register(engine, fakes.refs)
    files = staged_files(JOB, 0, files=3)
    assert engine.commit_transaction(JOB, epoch, 0, files).state is TransactionState.COMMITTED
    for name in ("kafka#0", "kafka#1"):
        assert fakes[name].files_seen[TransactionId(JOB, 0)] == tuple(files)


@pytest.mark.parametrize(
    ("refs", "message"),
    [
        pytest.param(
            ParticipantRef.shards_of("kafka", ["a:1", "b:1", "c:1"])[:2],
            "sink 'kafka' has 3 shards, but shard(s) 2 missing",
            id="missing-shard",
        ),
        pytest.param(
            (*ParticipantRef.shards_of("kafka", ["a:1", "b:1"]), ParticipantRef("kafka", "c:1", shard=Shard(2, 3))),
            "sink 'kafka' is listed with 2 and 3 shards",
            id="counts-differ",
        ),
        pytest.param(
            ParticipantRef.shards_of("kafka", ["a:1", "a:1"]),
            "shards of sink 'kafka' share target a:1",
            id="shared-target",
        ),
        pytest.param(
            (*ParticipantRef.shards_of("kafka", ["a:1", "b:1"]), ParticipantRef("kafka", "c:1", shard=Shard(1, 2))),
            "shard 1 of 2 of sink 'kafka' is listed twice",
            id="twice",
        ),
        pytest.param(
            (
                ParticipantRef("kafka", "a:1", (APPEND,), Shard(0, 2)),
                ParticipantRef("kafka", "b:1", (), Shard(1, 2)),
            ),
            "shard 1 of 2 of sink 'kafka' has other bindings than shard 0 of 2",
            id="bindings-differ",
        ),
        pytest.param(
            ParticipantRef.shards_of(
                "kafka",
                ["a:1", "b:1"],
                (APPEND, replace(APPEND, topic="latest", mode=SinkMode.UPSERT, keys=("ip",))),
            ),
            "output 'results' cannot be split both by key",
            id="key-and-file",
        ),
        pytest.param((ParticipantRef("kafka#1", "a:1"),), "'kafka#1' contains '#'", id="hash-in-name"),
    ],
)
def test_registrations_a_sharded_sink_cannot_serve_are_refused(
    engine: TwoPhaseCommitEngine, refs: tuple[ParticipantRef, ...], message: str
) -> None:
    epoch = engine.register_writer(JOB, "driver").epoch
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        engine.register_participants(JOB, epoch, list(refs))


def test_shards_survive_the_log_and_the_wire() -> None:
    refs = ParticipantRef.shards_of("kafka", ["a:1", "b:1"], (APPEND,))
    job = JobState(JOB, epoch=2, writer_id="w", participants=refs)
    key, value = encode(job)
    assert decode(key, value) == job
    messages = [
        coordinator_pb2.ParticipantRef(sink=r.sink, target=r.target, shard=shard_to_proto(r.shard)) for r in refs
    ]
    assert [r.shard for r in participants_from_proto(messages)] == [Shard(0, 2), Shard(1, 2)]
    bad = coordinator_pb2.ParticipantRef(sink="kafka", target="a:1", shard=common_pb2.Shard(index=3, count=2))
    with pytest.raises(InvalidRequest, match=r"participants\[0\]\.shard.*shard index 3 is not in 0..1"):
        participants_from_proto([bad])


def test_a_shard_missing_its_commit_is_retried_alone(engine: TwoPhaseCommitEngine, fakes: FakeParticipants) -> None:
    epoch = _register(engine, fakes.refs)
    fakes["kafka#0"].fail_commits = 2
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state.is_commit
    deadline = time.monotonic() + 5
    while engine.get_transaction(JOB, 0).state is not TransactionState.COMMITTED:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    txn = TransactionId(JOB, 0)
    assert fakes["kafka#0"].count("commit", txn) == 3
    assert fakes["kafka#1"].count("commit", txn) == 1
