"""Offsets in the compacted offsets topic, read with read_committed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Producer

from onceflow.core.kafka import (
    DEFAULT_REPLICATION,
    Replication,
    idempotent_producer_config,
    produce_acknowledged,
    read_to_end,
)
from onceflow.core.logging import get_logger
from onceflow.runtime.storage import kafka_log
from onceflow.runtime.storage.kafka_log import ensure_topic
from onceflow.runtime.storage.offsets import (
    Offset,
    OffsetBackingStore,
    Partition,
    decode_offset_key,
    decode_offset_value,
    encode_offset_key,
    encode_offset_value,
)

_log = get_logger(__name__)


class KafkaOffsetBackingStore(OffsetBackingStore):
    """Source offsets in ``topic``. Exactly-once source tasks write their offsets to the same topic
    themselves, inside their transactions; this store reads them and serves the admin API."""

    def __init__(
        self,
        client_config: Mapping[str, Any],
        topic: str,
        *,
        partitions: int = 5,
        replication: Replication = DEFAULT_REPLICATION,
    ) -> None:
        self.topic = topic
        self.client_config = dict(client_config)
        self._partitions = partitions
        self._replication = replication
        self._producer: Producer | None = None

    def start(self) -> None:
        config = {"cleanup.policy": "compact"}
        ensure_topic(self.client_config, self.topic, self._partitions, config, replication=self._replication)

    def stop(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)

    def offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Step 1: read the whole topic to its end with read_committed; Step 2: keep the last value per key."""
        latest: dict[bytes, dict[str, Any] | None] = {}
        # Step 1
        records = read_to_end(
            self.client_config,
            self.topic,
            until="high_watermark",
            policy=kafka_log.END_OFFSETS_RETRY,
            group_prefix=kafka_log.GROUP_PREFIX,
        )
        for record in records:
            key = record.key
            if key is None:
                continue
            try:
                name, _ = decode_offset_key(key)
                if name == connector:
                    latest[key] = decode_offset_value(record.value)
            except ValueError:
                _log.warning("offsets.unreadable_record", topic=self.topic, key=key[:80])
        # Step 2
        return [(decode_offset_key(k)[1], v) for k, v in latest.items() if v is not None]

    def write(self, connector: str, offsets: Iterable[tuple[Partition, Offset | None]]) -> None:
        if self._producer is None:
            self._producer = Producer(idempotent_producer_config(self.client_config, **{"linger.ms": 0}))
        records = [
            {"key": encode_offset_key(connector, partition), "value": encode_offset_value(offset)}
            for partition, offset in offsets
        ]
        produce_acknowledged(self._producer, self.topic, records)
