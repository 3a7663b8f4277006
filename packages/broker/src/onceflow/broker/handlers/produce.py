"""Produce: append record batches to partition logs.

Authorization first (Kafka's order): a transactional produce needs WRITE on its transactional id
(every partition gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise), every topic WRITE on the topic
(TOPIC_AUTHORIZATION_FAILED for its partitions, whether or not it exists).

Per authorized partition, in request order:
    1. Resolve the topic (auto-creating it when enabled and the principal may create it) and
       partition; unknown ones get UNKNOWN_TOPIC_OR_PARTITION.
    2. A transactional produce (``transactional_id`` set) must go to a partition already in its
       producer's open transaction (AddPartitionsToTxn): otherwise INVALID_PRODUCER_EPOCH if the
       producer was fenced, else INVALID_TXN_STATE. This keeps a late or stray batch from opening a
       transaction no marker will ever close (a "hanging" transaction would hold the LSO forever).
    3. Append the batches as received (CRC, size, idempotence and transactional checks are the
       storage layer's; its errors become CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, OUT_OF_ORDER_SEQUENCE_NUMBER,
       INVALID_TXN_STATE, ...). A duplicate idempotent batch is acknowledged with the offset it was
       first written at.
    4. Wake fetches waiting on the partition.

Guarantees: the append has returned (bytes are in the OS, fsynced too with ``fsync=always``) before
the response is sent, so an acknowledged write survives ``kill -9``. On a single node acks=1 and
acks=-1 mean the same thing; acks=0 gets no response at all.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.storage_errors import error_code_for
from onceflow.broker.storage.errors import CorruptRecordError, DuplicateSequenceError, StorageError
from onceflow.broker.storage.header import parse_header
from onceflow.broker.topics import KAFKA_INTERNAL_TOPICS
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.produce")


def _append_time(timestamp_ms: int) -> datetime.datetime | None:
    """LogAppendTime as the protocol carries it: None (-1 on the wire) for CreateTime topics."""
    if timestamp_ms < 0:
        return None
    return datetime.datetime.fromtimestamp(timestamp_ms / 1000.0, tz=datetime.UTC)


def _failure(index: int, code: ErrorCode, message: str | None = None) -> dict[str, object]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


def _transaction_error(ctx: RequestContext, transactional_id: str, topic: str, index: int, records: bytes) -> ErrorCode:
    """Step 2: NONE if the batch may join its producer's open transaction in this partition."""
    try:
        header = parse_header(records)
    except CorruptRecordError:
        return ErrorCode.none  # the append reports it
    coordinator = ctx.broker.transactions
    if not header.is_transactional or coordinator.is_partition_in_open_txn(header.producer_id, topic, index):
        return ErrorCode.none
    (current,) = coordinator.describe_transactions([transactional_id])
    fenced = current.producer_id == header.producer_id and current.producer_epoch > header.producer_epoch
    code = ErrorCode.invalid_producer_epoch if fenced else ErrorCode.invalid_txn_state
    log.info(
        "produce.rejected",
        **ctx.log_dict(),
        topic=topic,
        partition=index,
        transactional_id=transactional_id,
        pid=header.producer_id,
        epoch=header.producer_epoch,
        error=code.name,
        reason="partition not in the producer's open transaction",
    )
    return code


async def _produce_partition(
    ctx: RequestContext, topic_name: str, index: int, records: bytes | None, transactional_id: str | None
) -> dict[str, object]:
    broker = ctx.broker
    # Step 1
    topic = broker.topics.get(topic_name)
    if topic is None and topic_name not in KAFKA_INTERNAL_TOPICS and ctx.may_create_topic(topic_name):
        topic = await broker.auto_create_topic(topic_name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return _failure(index, ErrorCode.unknown_topic_or_partition)
    if not records:
        return _failure(index, ErrorCode.invalid_record, "empty record set")
    partition = topic.partitions[index]
    # Step 2
    if transactional_id is not None:
        code = _transaction_error(ctx, transactional_id, topic_name, index, records)
        if code is not ErrorCode.none:
            return _failure(index, code)
    # Step 3
    try:
        outcome = partition.append(bytes(records))
    except DuplicateSequenceError as dup:
        return {
            "index": index,
            "error_code": ErrorCode.none,
            "base_offset": dup.base_offset,
            "log_append_time": _append_time(dup.log_append_time_ms),
            "log_start_offset": partition.log_start_offset,
            "record_errors": [],
        }
    except StorageError as exc:
        code = error_code_for(exc)
        log.info("produce.rejected", **ctx.log_dict(), topic=topic_name, partition=index, error=code.name, reason=exc)
        return _failure(index, code, str(exc))
    except Exception as exc:
        log.exception("produce.failed", **ctx.log_dict(), topic=topic_name, partition=index)
        return _failure(index, ErrorCode.kafka_storage_error, f"{type(exc).__name__}: {exc}")
    # Step 4
    broker.waiters.notify(topic_name, index)
    return {
        "index": index,
        "error_code": ErrorCode.none,
        "base_offset": outcome.base_offset,
        "log_append_time": _append_time(outcome.log_append_time_ms),
        "log_start_offset": outcome.log_start_offset,
        "record_errors": [],
    }


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Append every partition's batches; answer unless acks=0."""
    if request.acks not in (0, 1, -1):
        responses = [
            {
                "name": t.name,
                "partition_responses": [_failure(p.index, ErrorCode.invalid_required_acks) for p in t.partition_data],
            }
            for t in request.topic_data
        ]
        return ctx.respond({"responses": responses, "throttle_time": 0})
    responses = []
    transactional_id = getattr(request, "transactional_id", None)
    if transactional_id is not None and not ctx.authorized(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        refused = ErrorCode.transactional_id_authorization_failed
        responses = [
            {"name": t.name, "partition_responses": [_failure(p.index, refused) for p in t.partition_data]}
            for t in request.topic_data
        ]
        return None if request.acks == 0 else ctx.respond({"responses": responses, "throttle_time": 0})
    for topic_data in request.topic_data:
        if not ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, topic_data.name):
            refused = ErrorCode.topic_authorization_failed
            partitions = [_failure(p.index, refused) for p in topic_data.partition_data]
        else:
            partitions = [
                await _produce_partition(ctx, topic_data.name, p.index, p.records, transactional_id)
                for p in topic_data.partition_data
            ]
        responses.append({"name": topic_data.name, "partition_responses": partitions})
    if request.acks == 0:
        return None
    return ctx.respond({"responses": responses, "throttle_time": 0})
