"""A job's sink bindings through the coordinator: registered, checked by the participants first,
logged, sent with every prepare and commit (also after a restart), and refused with a clear error."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pyarrow as pa
import pytest

from onceflow.contract import ParticipantRef, SinkBinding, SinkMode, TransactionId, TransactionState
from onceflow.contract.proto import binding_to_proto
from onceflow.coordinator.convert import participants_from_proto
from onceflow.coordinator.engine import TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import InvalidRequest
from onceflow.coordinator.log import MemoryLogStorage
from onceflow.coordinator.log.records import decode
from onceflow.coordinator.model import JobState
from onceflow.coordinator.participants.base import BindingsRefused
from onceflow.proto.v1 import coordinator_pb2
from onceflow.testing.coordinator import FakeParticipants, staged_files

from .conftest import JOB, EngineFactory

SCHEMA = pa.schema([pa.field("path", pa.string()), pa.field("hits", pa.int64())])


def _refs(fakes: FakeParticipants) -> list[ParticipantRef]:
    refs = []
    for ref in fakes.refs:
        bindings = (
            SinkBinding(sink=ref.sink, output="results", table="hits", mode=SinkMode.APPEND, schema=SCHEMA),
            SinkBinding(sink=ref.sink, output="dead_letters", table="rejects", mode=SinkMode.APPEND, schema=SCHEMA),
        )
        refs.append(replace(ref, bindings=bindings))
    return refs


def _wait_state(engine: TwoPhaseCommitEngine, batch: int, state: TransactionState, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while engine.get_transaction(JOB, batch).state is not state:
        assert time.monotonic() < deadline, engine.get_transaction(JOB, batch)
        time.sleep(0.02)


def test_bindings_are_checked_logged_and_sent_with_every_call_also_after_a_restart(
    engine_factory: EngineFactory, fakes: FakeParticipants
) -> None:
    first = engine_factory()
    epoch = first.register_writer(JOB, "driver").epoch
    refs = _refs(fakes)
    first.register_participants(JOB, epoch, refs)
    for ref in refs:  # checked by every participant before the registration was accepted
        assert fakes[ref.sink].bindings_seen == [("prepare_bindings", JOB, ref.bindings)]
    files = [replace(f, output="dead_letters") if i else f for i, f in enumerate(staged_files(JOB, 0))]
    fakes["sqlite"].fail_commits = 10**6
    assert first.commit_transaction(JOB, epoch, 0, files).state is TransactionState.COMMITTING
    first.close()  # the decision is logged; sqlite never acked

    fakes["sqlite"].fail_commits = 0
    second = engine_factory()
    _wait_state(second, 0, TransactionState.COMMITTED)
    txn = TransactionId(JOB, 0)
    sqlite = fakes["sqlite"]
    assert [f.output for f in sqlite.files_seen[txn]] == ["results", "dead_letters"]
    calls = [(call, bindings) for call, key, bindings in sqlite.bindings_seen if key == txn]
    assert calls[0] == ("prepare", refs[list(fakes.sinks).index("sqlite")].bindings)
    assert calls[-1][0] == "commit" and calls[-1][1] == calls[0][1], "the restarted engine sends the logged bindings"
    assert calls[-1][1][0].schema == SCHEMA
    assert second.get_transaction(JOB, 0).files == tuple(files)


def test_refused_bindings_fail_the_registration_and_keep_the_old_participants(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants
) -> None:
    epoch = engine.register_writer(JOB, "driver").epoch
    fakes["postgres"].refuse_bindings = "table 'hits' (output 'results'): column 'hits' has type text"
    with pytest.raises(BindingsRefused, match=r"participant 'postgres' at fake:postgres refused .* column 'hits'"):
        engine.register_participants(JOB, epoch, _refs(fakes))
    with pytest.raises(Exception, match="participants"):
        engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))  # nothing was registered


def test_bad_bindings_are_invalid_arguments_naming_them(engine: TwoPhaseCommitEngine, fakes: FakeParticipants) -> None:
    epoch = engine.register_writer(JOB, "driver").epoch
    ref = fakes.refs[0]
    other = replace(ref, bindings=(SinkBinding(sink="elsewhere", table="t", mode=SinkMode.APPEND),))
    with pytest.raises(InvalidRequest, match=r"participants\[0\].bindings\[0\].sink: is 'elsewhere'"):
        engine.register_participants(JOB, epoch, [other])
    message = binding_to_proto(SinkBinding(sink=ref.sink, table="t", mode=SinkMode.APPEND))
    message.mode = "merge"
    request = coordinator_pb2.ParticipantRef(sink=ref.sink, target=ref.target, bindings=[message])
    with pytest.raises(InvalidRequest, match=r"participants\[0\].bindings\[0\]: binding mode 'merge'"):
        participants_from_proto([request])


def test_records_written_before_bindings_existed_still_load(storage: MemoryLogStorage) -> None:
    job = {"v": 1, "type": "job", "job": JOB, "epoch": 3, "writer_id": "w", "last_committed_batch": 4,
           "participants": [{"sink": "sqlite", "target": "127.0.0.1:1"}]}  # fmt: skip
    loaded = decode(f"job:{JOB}".encode(), json.dumps(job).encode())
    assert isinstance(loaded, JobState)
    assert loaded.participants == (ParticipantRef("sqlite", "127.0.0.1:1"),)
    txn = {"v": 1, "type": "txn", "job": JOB, "batch": 0, "state": "COMMITTING", "writer_epoch": 3, "attempt": 1,
           "files": [{"uri": "file:///s/a", "count": 1, "sha256": "ab" * 32}],
           "participants": [{"sink": "sqlite", "target": "127.0.0.1:1"}], "votes": [],
           "started_at": 1.0, "updated_at": 1.0, "reason": ""}  # fmt: skip
    loaded_txn = decode(f"{JOB}:0".encode(), json.dumps(txn).encode())
    assert loaded_txn.files[0].output == "results"  # type: ignore[union-attr]
