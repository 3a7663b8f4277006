"""PRODUCER_FENCED for clients that know it (KIP-588), INVALID_PRODUCER_EPOCH for older ones.

KIP-588 added PRODUCER_FENCED in InitProducerId v4, AddPartitionsToTxn v2, AddOffsetsToTxn v2 and
EndTxn v2 (Kafka's request JSON schemas); an older request version gets INVALID_PRODUCER_EPOCH, which
clients treat the same way (fatal: the producer was fenced). TxnOffsetCommit never gained the code
(its versions 0-5 do not mention it; Kafka answers a fenced TxnOffsetCommit with
INVALID_PRODUCER_EPOCH), so it always gets INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from onceflow.broker.protocol import versions

_FIRST_VERSION_WITH_PRODUCER_FENCED: dict[int, int] = {
    versions.INIT_PRODUCER_ID: 4,
    versions.ADD_PARTITIONS_TO_TXN: 2,
    versions.ADD_OFFSETS_TO_TXN: 2,
    versions.END_TXN: 2,
}


def for_client(code: ErrorCode, api_key: int, api_version: int) -> ErrorCode:
    """``code`` as the client of ``api_key`` at ``api_version`` understands it."""
    if code is not ErrorCode.producer_fenced:
        return code
    first = _FIRST_VERSION_WITH_PRODUCER_FENCED.get(api_key)
    if first is None or api_version < first:
        return ErrorCode.invalid_producer_epoch
    return code
