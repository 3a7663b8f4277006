"""DeleteRecords: ``AdminClient.delete_records``, ``kafka-delete-records``.

Guarantees, per partition (``PartitionLog.delete_records``): the log start offset moves to the
requested offset (-1: the high watermark) durably before the answer, whose ``low_watermark`` is the
new log start offset; records below it are never served again (a fetch there is OFFSET_OUT_OF_RANGE,
ListOffsets earliest returns it). An offset past the high watermark is OFFSET_OUT_OF_RANGE, an unknown
partition UNKNOWN_TOPIC_OR_PARTITION, a failed write KAFKA_STORAGE_ERROR; deleting needs DELETE on
the topic (TOPIC_AUTHORIZATION_FAILED, checked first, as in Kafka).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.storage_errors import error_code_for
from onceflow.broker.storage.errors import StorageError
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.admin")


def _delete(ctx: RequestContext, name: str, index: int, offset: int, allowed: bool) -> tuple[ErrorCode, int]:
    if not allowed:
        return ErrorCode.topic_authorization_failed, -1
    topic = ctx.broker.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.unknown_topic_or_partition, -1
    try:
        return ErrorCode.none, topic.partitions[index].log.delete_records(offset)
    except StorageError as exc:
        return error_code_for(exc), -1


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Move the log start offset of every requested partition (see module docs)."""
    topics = []
    for wanted in request.topics:
        results = []
        allowed = ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, wanted.name)
        for p in wanted.partitions:
            code, low = _delete(ctx, wanted.name, p.partition_index, p.offset, allowed)
            log.info(
                "records.delete",
                **ctx.log_dict(),
                topic=wanted.name,
                partition=p.partition_index,
                offset=p.offset,
                low_watermark=low,
                error=code.name,
            )
            results.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": code})
        topics.append({"name": wanted.name, "partitions": results})
    return ctx.respond({"throttle_time": 0, "topics": topics})
