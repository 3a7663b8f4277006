"""A participant whose state disk is full votes nothing and loses nothing (the Kafka sink's journal).

The Kafka participant writes its journal entry (the durable prepared state: which staged files make up
the transaction) on a thread of its own while it produces the batch into an open Kafka transaction,
and waits for both before it votes. Here its state dir is a real tmpfs, filled up: the entry cannot be
written (ENOSPC), so the open Kafka transaction must be aborted and the error raised: no yes vote, no
half-written entry, nothing visible to a read_committed reader. Once space returns, the same batch
prepares and commits exactly once.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import TransactionId
from onceflow.contract.staging import StagingWriter
from onceflow.core.avro import IP_COUNT_SERDE, IpCount
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_topic_binding
from onceflow.sinks.kafka import KafkaParticipant
from onceflow.testing.broker.clients import read_topic

from .mounts import fill_up, tmpfs

W0 = 1_700_000_000_000


def _committed(broker: EmbeddedBroker, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    return [(r.key, r.value) for r in read_topic(broker.bootstrap_servers, topic, idle_timeout=0.5)]


def test_a_full_state_disk_fails_the_prepare_and_the_batch_commits_once_space_returns(
    tmp_path: Path, broker: EmbeddedBroker
) -> None:
    # The staged batch lives on the normal disk; the participant's state dir on a 1 MiB tmpfs.
    rows = [IpCount(window_start=W0, window_end=W0 + 5_000, ip=f"10.0.0.{i}", count=i + 1) for i in range(3)]
    files = [StagingWriter(str(tmp_path / "staging"), "job", 0).write("part-0-attempt-0", rows, IP_COUNT_ARROW_SCHEMA)]
    txn = TransactionId("job", 0)
    with tmpfs(tmp_path / "state", size="1m") as state:
        sink = KafkaParticipant(
            "kafka", KafkaSettings(bootstrap_servers=broker.bootstrap_servers), state_dir=state, timeout_s=30
        )
        try:
            bindings = [ip_count_topic_binding(sink.name, sink.topic)]
            filler = state / "filler"
            fill_up(filler)

            with pytest.raises(OSError) as failed:
                sink.prepare(txn, files, bindings)
            assert failed.value.errno == errno.ENOSPC, f"the journal's own error is raised: {failed.value!r}"
            assert sink.list_prepared() == [], "no entry (and so no yes vote) without the durable prepared state"
            leftovers = [p.name for p in (state / "kafka" / "prepared").rglob("*") if p.is_file()]
            assert leftovers == [], f"a failed entry leaves no temporary file behind: {leftovers}"
            assert _committed(broker, SINK_TOPIC) == [], "the open Kafka transaction was aborted"

            filler.unlink()
            vote = sink.prepare(txn, files, bindings)
            assert (vote.vote_commit, vote.rows) == (True, 3), vote.reason
            sink.commit(txn)
            assert sink.list_prepared() == []
        finally:
            sink.close()

    values = [IP_COUNT_SERDE.decode(value or b"") for _, value in _committed(broker, SINK_TOPIC)]
    assert sorted((v["ip"], v["count"]) for v in values) == [("10.0.0.0", 1), ("10.0.0.1", 2), ("10.0.0.2", 3)]
    assert _committed(broker, SINK_COMMITS_TOPIC) == [(b"kafka:job", b"0")], "one marker: committed once"
