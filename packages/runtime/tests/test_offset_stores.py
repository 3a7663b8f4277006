"""Offset backing stores: memory, file and Kafka keep the last offset per (connector, partition)."""

from __future__ import annotations

import json
from pathlib import Path

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.runtime.storage import (
    FileOffsetBackingStore,
    KafkaOffsetBackingStore,
    MemoryOffsetBackingStore,
    OffsetBackingStore,
)
from onceflow.testing.broker.clients import read_topic


def _exercise(store: OffsetBackingStore) -> None:
    store.write("a", [({"file": "/x"}, {"offset": 1}), ({"file": "/y"}, {"offset": 5})])
    store.write("a", [({"file": "/x"}, {"offset": 2})])
    store.write("b", [({"file": "/x"}, {"offset": 9})])
    assert sorted(store.offsets("a"), key=str) == [({"file": "/x"}, {"offset": 2}), ({"file": "/y"}, {"offset": 5})]
    store.write("a", [({"file": "/y"}, None)])
    assert store.offsets("a") == [({"file": "/x"}, {"offset": 2})]
    assert store.offsets("b") == [({"file": "/x"}, {"offset": 9})]


def test_memory_store() -> None:
    _exercise(MemoryOffsetBackingStore())


def test_file_store_survives_a_restart(tmp_path: Path) -> None:
    store = FileOffsetBackingStore(tmp_path / "offsets.json")
    _exercise(store)
    again = FileOffsetBackingStore(tmp_path / "offsets.json")
    again.start()
    assert again.offsets("a") == [({"file": "/x"}, {"offset": 2})]


def test_kafka_store_uses_kafka_connect_keys(broker: EmbeddedBroker) -> None:
    store = KafkaOffsetBackingStore({"bootstrap.servers": broker.bootstrap_servers}, "offsets", partitions=2)
    store.start()
    _exercise(store)
    keys = {
        json.dumps(json.loads(r.key or b"")) for r in read_topic(broker.bootstrap_servers, "offsets", idle_timeout=0.3)
    }
    assert json.dumps(["a", {"file": "/x"}]) in keys
