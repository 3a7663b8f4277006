"""Backing stores of offsets, connector configs and statuses: an ABC each, with memory, file and
Kafka (compacted internal topic) implementations, as in Kafka Connect."""

from onceflow.runtime.storage.configs import ClusterConfig, ConfigBackingStore, ConnectorEntry, MemoryConfigBackingStore
from onceflow.runtime.storage.kafka_configs import KafkaConfigBackingStore
from onceflow.runtime.storage.kafka_log import KafkaBasedLog
from onceflow.runtime.storage.kafka_offsets import KafkaOffsetBackingStore
from onceflow.runtime.storage.kafka_status import KafkaStatusBackingStore
from onceflow.runtime.storage.offsets import (
    FileOffsetBackingStore,
    MemoryOffsetBackingStore,
    OffsetBackingStore,
    decode_offset_key,
    encode_offset_key,
    encode_offset_value,
)
from onceflow.runtime.storage.restarts import RestartRequest
from onceflow.runtime.storage.status import MemoryStatusBackingStore, StatusBackingStore
from onceflow.runtime.storage.stores import BackingStores

__all__ = [
    "BackingStores",
    "ClusterConfig",
    "ConfigBackingStore",
    "ConnectorEntry",
    "FileOffsetBackingStore",
    "KafkaBasedLog",
    "KafkaConfigBackingStore",
    "KafkaOffsetBackingStore",
    "KafkaStatusBackingStore",
    "MemoryConfigBackingStore",
    "MemoryOffsetBackingStore",
    "MemoryStatusBackingStore",
    "OffsetBackingStore",
    "RestartRequest",
    "StatusBackingStore",
    "decode_offset_key",
    "encode_offset_key",
    "encode_offset_value",
]
