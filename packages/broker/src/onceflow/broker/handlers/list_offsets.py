"""ListOffsets: map a timestamp (or the special -1 latest / -2 earliest / -3 max-timestamp) to an offset.

Guarantees: latest is the high watermark, or the last stable offset for read_committed
(isolation_level 1); earliest is the log start offset; a timestamp maps to the first offset whose
timestamp is at or after it, or -1 when there is none. A topic the principal may not DESCRIBE gets
TOPIC_AUTHORIZATION_FAILED for every partition.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.storage_errors import error_code_for
from onceflow.broker.partition import Partition
from onceflow.broker.storage.errors import StorageError

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


def _lookup(partition: Partition, timestamp: int, read_committed: bool) -> tuple[int, int]:
    """(timestamp, offset) to answer for one partition."""
    if timestamp == LATEST:
        return -1, partition.last_stable_offset if read_committed else partition.high_watermark
    if timestamp == EARLIEST:
        return -1, partition.log_start_offset
    if timestamp == MAX_TIMESTAMP:
        found = partition.offset_of_max_timestamp()
    else:
        found = partition.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1
    found_ts, offset = found
    if read_committed and offset >= partition.last_stable_offset:
        return -1, -1
    return found_ts, offset


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Answer every requested partition."""
    read_committed = getattr(request, "isolation_level", 0) == 1
    topics = []
    for wanted in request.topics:
        topic = ctx.broker.topics.get(wanted.name)
        answers: list[dict[str, object]] = []
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, wanted.name):
            refused = ErrorCode.topic_authorization_failed
            answers = [{"partition_index": p.partition_index, "error_code": refused} for p in wanted.partitions]
            topics.append({"name": wanted.name, "partitions": answers})
            continue
        for p in wanted.partitions:
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                answers.append(
                    {"partition_index": p.partition_index, "error_code": ErrorCode.unknown_topic_or_partition}
                )
                continue
            try:
                timestamp, offset = _lookup(topic.partitions[p.partition_index], p.timestamp, read_committed)
            except StorageError as exc:
                answers.append({"partition_index": p.partition_index, "error_code": error_code_for(exc)})
                continue
            answers.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": ErrorCode.none,
                    "timestamp": timestamp,
                    "offset": offset,
                    "leader_epoch": -1,
                }
            )
        topics.append({"name": wanted.name, "partitions": answers})
    return ctx.respond({"throttle_time": 0, "topics": topics})
