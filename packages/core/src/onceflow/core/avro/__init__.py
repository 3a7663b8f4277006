"""Avro schemas and single-object serde (fastavro) for every onceflow record."""

from onceflow.core.avro.schemas import ACCESS_EVENT_SCHEMA, IP_COUNT_SCHEMA, AccessEvent, IpCount
from onceflow.core.avro.single_object import SchemaRegistry, SingleObjectSerde, schema_fingerprint

ACCESS_EVENT_SERDE: SingleObjectSerde[AccessEvent] = SingleObjectSerde(ACCESS_EVENT_SCHEMA)
IP_COUNT_SERDE: SingleObjectSerde[IpCount] = SingleObjectSerde(IP_COUNT_SCHEMA)
REGISTRY = SchemaRegistry(ACCESS_EVENT_SERDE, IP_COUNT_SERDE)

__all__ = [
    "ACCESS_EVENT_SCHEMA",
    "ACCESS_EVENT_SERDE",
    "IP_COUNT_SCHEMA",
    "IP_COUNT_SERDE",
    "REGISTRY",
    "AccessEvent",
    "IpCount",
    "SchemaRegistry",
    "SingleObjectSerde",
    "schema_fingerprint",
]
