"""CreatePartitions: grow a topic's partition count (``AdminClient.create_partitions``,
``kafka-topics --alter --partitions``).

Guarantees, per topic in request order: a name twice in the request is INVALID_REQUEST; an unknown
topic UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one INVALID_PARTITIONS (Kafka's
message); manual assignments other than this broker INVALID_REPLICA_ASSIGNMENT; otherwise the new
partitions exist, empty, and are durable in the topic registry before the answer (with
``validate_only`` nothing changes, the answer is the same). A failure on the data dir is
KAFKA_STORAGE_ERROR and leaves the topic as it was. Growing a topic needs ALTER on it
(TOPIC_AUTHORIZATION_FAILED, checked before whether it exists, as in Kafka).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.topics_admin import MAX_PARTITIONS
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.admin")


def _result(name: str, code: ErrorCode = ErrorCode.none, message: str | None = None) -> dict[str, object]:
    return {"name": name, "error_code": code, "error_message": message}


def _grow(ctx: RequestContext, wanted: Any, validate_only: bool) -> dict[str, object]:
    name, total = wanted.name, int(wanted.count)
    if not ctx.authorized(AclOperation.ALTER, ResourceType.TOPIC, name):
        return _result(name, ErrorCode.topic_authorization_failed, f"{ctx.principal} may not alter the topic '{name}'.")
    topic = ctx.broker.topics.get(name)
    if topic is None:
        return _result(name, ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    current = len(topic.partitions)
    if total <= current:
        return _result(
            name,
            ErrorCode.invalid_partitions,
            f"Topic currently has {current} partitions, which is higher than the requested {total}.",
        )
    if total > MAX_PARTITIONS:
        return _result(name, ErrorCode.invalid_partitions, f"Number of partitions must be at most {MAX_PARTITIONS}.")
    assignments = wanted.assignments or ()
    if assignments and (
        len(assignments) != total - current or any(list(a.broker_ids) != [ctx.broker.node_id] for a in assignments)
    ):
        return _result(
            name,
            ErrorCode.invalid_replica_assignment,
            f"Each of the {total - current} new partitions must be assigned to exactly [{ctx.broker.node_id}].",
        )
    if validate_only:
        return _result(name)
    try:
        ctx.broker.topics.add_partitions(name, total)
    except OSError as exc:
        return _result(name, ErrorCode.kafka_storage_error, f"Partitions could not be created: {exc.strerror or exc}")
    log.info("topic.create_partitions", **ctx.log_dict(), topic=name, partitions=total, was=current)
    return _result(name)


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Grow every requested topic (see module docs)."""
    counts = Counter(t.name for t in request.topics)
    results = [
        _result(t.name, ErrorCode.invalid_request, "Duplicate topic in the request.")
        if counts[t.name] > 1
        else _grow(ctx, t, bool(request.validate_only))
        for t in request.topics
    ]
    return ctx.respond({"throttle_time": 0, "results": results})
