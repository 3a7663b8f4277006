"""The API keys and version ranges this broker implements.

Guarantee: every (api_key, version) pair advertised here has a handler and a kio schema, and each
range reaches a version that confluent-kafka (librdkafka 2.x), aiokafka 0.14 and kafka-python 3.0 all
negotiate. Maxima stop before versions that need features this broker does not have (topic ids in
Fetch/Produce, KIP-848 member epochs in offset APIs, KIP-890 transaction version 2: EndTxn v5,
TxnOffsetCommit v5 and Produce v12 imply partitions join a transaction without AddPartitionsToTxn).
AddPartitionsToTxn v4 (batched) is a broker-to-broker version; it is answered for completeness.
"""

from __future__ import annotations

from typing import Final

PRODUCE: Final = 0
FETCH: Final = 1
LIST_OFFSETS: Final = 2
METADATA: Final = 3
OFFSET_COMMIT: Final = 8
OFFSET_FETCH: Final = 9
FIND_COORDINATOR: Final = 10
JOIN_GROUP: Final = 11
HEARTBEAT: Final = 12
LEAVE_GROUP: Final = 13
SYNC_GROUP: Final = 14
DESCRIBE_GROUPS: Final = 15
LIST_GROUPS: Final = 16
SASL_HANDSHAKE: Final = 17
API_VERSIONS: Final = 18
CREATE_TOPICS: Final = 19
DELETE_TOPICS: Final = 20
INIT_PRODUCER_ID: Final = 22
ADD_PARTITIONS_TO_TXN: Final = 24
ADD_OFFSETS_TO_TXN: Final = 25
END_TXN: Final = 26
WRITE_TXN_MARKERS: Final = 27
TXN_OFFSET_COMMIT: Final = 28
DESCRIBE_ACLS: Final = 29
CREATE_ACLS: Final = 30
DELETE_ACLS: Final = 31
DESCRIBE_CONFIGS: Final = 32
ALTER_CONFIGS: Final = 33
CREATE_PARTITIONS: Final = 37
DELETE_GROUPS: Final = 42
DELETE_RECORDS: Final = 21
INCREMENTAL_ALTER_CONFIGS: Final = 44
SASL_AUTHENTICATE: Final = 36
DESCRIBE_PRODUCERS: Final = 61
DESCRIBE_TRANSACTIONS: Final = 65
LIST_TRANSACTIONS: Final = 66

SUPPORTED_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    PRODUCE: (3, 9),
    FETCH: (4, 12),
    LIST_OFFSETS: (1, 7),
    METADATA: (0, 12),
    OFFSET_COMMIT: (2, 8),
    OFFSET_FETCH: (1, 8),
    FIND_COORDINATOR: (0, 4),
    JOIN_GROUP: (0, 7),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    SYNC_GROUP: (0, 5),
    DESCRIBE_GROUPS: (0, 5),
    LIST_GROUPS: (0, 4),
    SASL_HANDSHAKE: (1, 1),
    API_VERSIONS: (0, 4),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 5),
    INIT_PRODUCER_ID: (0, 4),
    ADD_PARTITIONS_TO_TXN: (0, 4),
    ADD_OFFSETS_TO_TXN: (0, 3),
    END_TXN: (0, 3),
    WRITE_TXN_MARKERS: (1, 2),
    TXN_OFFSET_COMMIT: (0, 3),
    DESCRIBE_ACLS: (1, 3),
    CREATE_ACLS: (1, 3),
    DELETE_ACLS: (1, 3),
    DESCRIBE_CONFIGS: (1, 4),
    ALTER_CONFIGS: (0, 2),
    CREATE_PARTITIONS: (0, 3),
    DELETE_GROUPS: (0, 2),
    DELETE_RECORDS: (0, 2),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    SASL_AUTHENTICATE: (0, 2),
    DESCRIBE_PRODUCERS: (0, 0),
    DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 1),
}


def is_supported(api_key: int, api_version: int) -> bool:
    """True if this broker answers ``api_key`` at ``api_version``."""
    bounds = SUPPORTED_VERSIONS.get(api_key)
    return bounds is not None and bounds[0] <= api_version <= bounds[1]
