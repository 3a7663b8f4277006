"""Metadata: the single broker, and topics with their partitions (all led by this broker).

Guarantees: a null topic list (an empty one before v1) lists every topic; unknown topics are created
when the request allows it (always before v4) and ``auto_create_topics`` is on, otherwise answered with
UNKNOWN_TOPIC_OR_PARTITION; Kafka's internal topic names (``__consumer_offsets``,
``__transaction_state``) are never auto-created and are flagged internal if created; leader epochs
are reported as unknown (-1), so clients skip epoch validation, which this single-node broker never needs.

Authorization is Kafka's: a listing of every topic leaves out the topics the principal may not
DESCRIBE (it never learns they exist); a topic asked for by name or id without DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED whether or not it exists; a missing topic is auto-created only for a
principal with CREATE on the Cluster or on the topic (TOPIC_AUTHORIZATION_FAILED otherwise).
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.topics import KAFKA_INTERNAL_TOPICS, InvalidTopicName, Topic, check_topic_name

NULL_TOPIC_ID = "00000000-0000-0000-0000-000000000000"
_ZERO_UUID = uuid.UUID(int=0)


def describe_topic(topic: Topic, node_id: int) -> dict[str, object]:
    """The metadata of one existing topic."""
    return {
        "error_code": ErrorCode.none,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.name in KAFKA_INTERNAL_TOPICS,
        "partitions": [
            {
                "error_code": ErrorCode.none,
                "partition_index": index,
                "leader_id": node_id,
                "leader_epoch": -1,
                "replica_nodes": [node_id],
                "isr_nodes": [node_id],
                "offline_replicas": [],
            }
            for index in range(len(topic.partitions))
        ],
    }


def _refused(name: str | None, topic_id: object = _ZERO_UUID) -> dict[str, object]:
    return {
        "error_code": ErrorCode.topic_authorization_failed,
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [],
    }


async def _lookup(ctx: RequestContext, name: str, allow_create: bool) -> dict[str, object]:
    broker = ctx.broker
    try:
        check_topic_name(name)
    except InvalidTopicName:
        return {"error_code": ErrorCode.invalid_topic_exception, "name": name, "partitions": []}
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
        return _refused(name)
    topic = broker.topics.get(name)
    can_create = allow_create and broker.config.auto_create_topics and name not in KAFKA_INTERNAL_TOPICS
    if topic is None and can_create:
        if not ctx.may_create_topic(name):
            return _refused(name)
        topic = await broker.auto_create_topic(name)
    if topic is None:
        return {"error_code": ErrorCode.unknown_topic_or_partition, "name": name, "partitions": []}
    return describe_topic(topic, broker.node_id)


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Answer a Metadata request of any supported version."""
    broker = ctx.broker
    host, port = broker.advertised
    requested = request.topics
    allow_create = ctx.api_version < 4 or bool(getattr(request, "allow_auto_topic_creation", True))
    topics: list[dict[str, object]] = []
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [
            describe_topic(t, broker.node_id)
            for t in broker.topics
            if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name, log_denied=False)
        ]
    else:
        for wanted in requested:
            name = wanted.name
            topic_id = getattr(wanted, "topic_id", None)
            if name is None and topic_id is not None and str(topic_id) != NULL_TOPIC_ID:
                by_id = broker.topics.by_id(topic_id)
                if by_id is None:
                    topics.append({"error_code": ErrorCode.unknown_topic_id, "topic_id": topic_id, "partitions": []})
                elif not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, by_id.name):
                    topics.append(_refused(None, topic_id))
                else:
                    topics.append(describe_topic(by_id, broker.node_id))
                continue
            topics.append(await _lookup(ctx, name or "", allow_create))
    return ctx.respond(
        {
            "throttle_time": 0,
            "brokers": [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}],
            "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id,
            "topics": topics,
        }
    )
