"""DescribeProducers, ListTransactions and DescribeTransactions: what ``kafka-transactions.sh`` and
admin clients ask about producers and transactions.

Guarantees:
- DescribeProducers reports, per partition, every producer the partition log remembers: epoch, last
  sequence and timestamp, coordinator epoch, and the first offset of its open transaction (-1 if
  none); unknown partitions get UNKNOWN_TOPIC_OR_PARTITION.
- ListTransactions reports every transactional id passing the filters (states as Kafka names them:
  Empty, Ongoing, PrepareCommit, ...); state filters naming no state are echoed in
  ``unknown_state_filters``. v1 adds the duration filter (KIP-994).
- DescribeTransactions answers each id in request order (TRANSACTIONAL_ID_NOT_FOUND if unknown),
  with the partitions of its open transaction and the time it started (-1 before the first one).
- Authorization (Kafka's): DescribeProducers needs READ on the topic (TOPIC_AUTHORIZATION_FAILED);
  ListTransactions lists only the ids the principal may DESCRIBE; DescribeTransactions answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED for an id it may not DESCRIBE and leaves out the topics it
  may not DESCRIBE.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.transactions import KafkaTransactionState

_KNOWN_STATES = frozenset(state.value.casefold() for state in KafkaTransactionState)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _datetime_ms(ms: int) -> datetime.datetime:
    """Milliseconds since the epoch as the protocol's ``datetime_i64`` (-1 stays -1 on the wire)."""
    return _EPOCH + datetime.timedelta(milliseconds=ms)


def _partition_producers(ctx: RequestContext, topic_name: str, index: int, readable: bool) -> dict[str, object]:
    if not readable:
        return {"partition_index": index, "error_code": ErrorCode.topic_authorization_failed, "active_producers": []}
    topic = ctx.broker.topics.get(topic_name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return {"partition_index": index, "error_code": ErrorCode.unknown_topic_or_partition, "active_producers": []}
    state = topic.partitions[index].log.producer_state
    producers = [
        {
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "last_sequence": entry.last_seq,
            "last_timestamp": entry.last_timestamp_ms,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_start_offset": -1
            if entry.current_txn_first_offset is None
            else entry.current_txn_first_offset,
        }
        for entry in state.active_producers()
    ]
    return {"partition_index": index, "error_code": ErrorCode.none, "active_producers": producers}


async def handle_describe_producers(ctx: RequestContext, request: Any) -> Any:
    """DescribeProducers (see module docs)."""
    topics = []
    for t in request.topics:
        readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, t.name)
        partitions = [_partition_producers(ctx, t.name, int(p), readable) for p in t.partition_indexes]
        topics.append({"name": t.name, "partitions": partitions})
    return ctx.respond({"throttle_time": 0, "topics": topics})


async def handle_list_transactions(ctx: RequestContext, request: Any) -> Any:
    """ListTransactions (see module docs)."""
    state_filters = list(request.state_filters)
    listings = ctx.broker.transactions.list_transactions(
        state_filters,
        [int(pid) for pid in request.producer_id_filters],
        int(getattr(request, "duration_filter", -1)),
    )
    return ctx.respond(
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "unknown_state_filters": [name for name in state_filters if name.casefold() not in _KNOWN_STATES],
            "transaction_states": [
                {
                    "transactional_id": listing.transactional_id,
                    "producer_id": listing.producer_id,
                    "transaction_state": listing.state,
                }
                for listing in listings
                if ctx.authorized(
                    AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, listing.transactional_id, log_denied=False
                )
            ],
        }
    )


async def handle_describe_transactions(ctx: RequestContext, request: Any) -> Any:
    """DescribeTransactions (see module docs)."""
    wanted = list(request.transactional_ids)
    allowed = [i for i in wanted if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, i)]
    descriptions = {d.transactional_id: d for d in ctx.broker.transactions.describe_transactions(allowed)}
    states: list[dict[str, object]] = []
    for transactional_id in wanted:
        d = descriptions.get(transactional_id)
        if d is None:
            refused = ErrorCode.transactional_id_authorization_failed
            states.append({"error_code": refused, "transactional_id": transactional_id, "topics": []})
            continue
        topics = [
            {"topic": topic, "partitions": partitions}
            for topic, partitions in sorted(d.topics.items())
            if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic, log_denied=False)
        ]
        states.append(
            {
                "error_code": d.error,
                "transactional_id": d.transactional_id,
                "transaction_state": d.state,
                "transaction_timeout": d.timeout_ms,
                "transaction_start_time": _datetime_ms(d.start_time_ms),
                "producer_id": d.producer_id,
                "producer_epoch": d.producer_epoch,
                "topics": topics,
            }
        )
    return ctx.respond({"throttle_time": 0, "transaction_states": states})
