"""CreateTopics and DeleteTopics.

CreateTopics checks, per topic, in this order: duplicate in the request (INVALID_REQUEST), legal name
(INVALID_TOPIC_EXCEPTION), not existing (TOPIC_ALREADY_EXISTS), partitions >= 1 or -1 for the default
(INVALID_PARTITIONS; at most 10,000), replication factor 1 or -1 (INVALID_REPLICATION_FACTOR), manual assignments only
to this broker (INVALID_REPLICA_ASSIGNMENT), configs valid (INVALID_CONFIG, message naming the config).
A create that fails on the data dir (its files cannot be created) is KAFKA_STORAGE_ERROR and leaves
nothing behind.
With ``validate_only`` nothing is created, but the answer is the same. A created topic is durable
before the response is sent.

Authorization (Kafka's): creating needs CREATE on the Cluster or on the topic
(TOPIC_AUTHORIZATION_FAILED), and the created topic's configs are answered only with DESCRIBE_CONFIGS
on it (``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED otherwise); deleting needs DELETE on the
Cluster or on the topic, and a topic the principal may not even DESCRIBE is TOPIC_AUTHORIZATION_FAILED
whether or not it exists.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.config_entries import topic_entries
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.storage.errors import InvalidTopicConfig
from onceflow.broker.topics import InvalidTopicName, TopicExists
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.admin")

MAX_PARTITIONS = 10_000
"""More partitions than a single-node embedded broker can sensibly hold open (a guard, not a Kafka rule)."""


def _failed(name: str, code: ErrorCode, message: str) -> dict[str, object]:
    return {
        "name": name,
        "topic_id": None,
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


async def _create_one(ctx: RequestContext, wanted: Any, validate_only: bool) -> dict[str, object]:
    broker = ctx.broker
    name = wanted.name
    partitions = wanted.num_partitions
    assignments = wanted.assignments
    if assignments:
        if partitions != -1 or wanted.replication_factor != -1:
            return _failed(
                name,
                ErrorCode.invalid_request,
                "Both numPartitions or replicationFactor and replicasAssignments were set.",
            )
        if any(list(a.broker_ids) != [broker.node_id] for a in assignments):
            return _failed(name, ErrorCode.invalid_replica_assignment, f"Replicas must be exactly [{broker.node_id}].")
        partitions = len(assignments)
    if partitions == -1:
        partitions = broker.config.default_partitions
    if partitions < 1:
        return _failed(name, ErrorCode.invalid_partitions, "Number of partitions must be larger than 0.")
    if partitions > MAX_PARTITIONS:
        return _failed(name, ErrorCode.invalid_partitions, f"Number of partitions must be at most {MAX_PARTITIONS}.")
    if wanted.replication_factor not in (1, -1):
        return _failed(
            name,
            ErrorCode.invalid_replication_factor,
            f"Replication factor must be 1 (or -1 for the default) on this single-node broker, got "
            f"{wanted.replication_factor}.",
        )
    configs = {c.name: c.value for c in wanted.configs if c.value is not None}
    try:
        if validate_only:
            log_config = broker.topics.validate(name, partitions, configs)
            topic_id = None
        else:
            topic = await broker.create_topic(name, partitions, configs)
            log_config, topic_id = topic.log_config, topic.topic_id
    except InvalidTopicName as exc:
        return _failed(name, ErrorCode.invalid_topic_exception, str(exc))
    except TopicExists:
        return _failed(name, ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    except InvalidTopicConfig as exc:
        return _failed(name, ErrorCode.invalid_config, f"Invalid value for config '{exc.name}': {exc.reason}")
    except ValueError as exc:
        return _failed(name, ErrorCode.invalid_partitions, str(exc))
    except OSError as exc:  # the registry rolled the topic back (and logged it): nothing of it is left
        reason = exc.strerror or str(exc)
        return _failed(name, ErrorCode.kafka_storage_error, f"Topic '{name}' could not be created: {reason}")
    log.info("topic.create", **ctx.log_dict(), topic=name, partitions=partitions, validate_only=validate_only)
    created: dict[str, object] = {
        "name": name,
        "topic_id": topic_id,
        "error_code": ErrorCode.none,
        "error_message": None,
        "num_partitions": partitions,
        "replication_factor": 1,
        "configs": [e.describe() for e in topic_entries(configs, log_config.to_topic_configs())],
    }
    if not ctx.authorized(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name, log_denied=False):
        created |= {"configs": None, "topic_config_error_code": ErrorCode.topic_authorization_failed}
    return created


async def handle_create(ctx: RequestContext, request: Any) -> Any:
    """Create every requested topic (see module docs)."""
    counts = Counter(t.name for t in request.topics)
    results = []
    for wanted in request.topics:
        if counts[wanted.name] > 1:
            results.append(
                _failed(wanted.name, ErrorCode.invalid_request, "Create topics request contains duplicate topic names.")
            )
            continue
        if not ctx.may_create_topic(wanted.name):
            results.append(_failed(wanted.name, ErrorCode.topic_authorization_failed, "Authorization failed."))
            continue
        results.append(await _create_one(ctx, wanted, bool(getattr(request, "validate_only", False))))
    return ctx.respond({"throttle_time": 0, "topics": results})


async def handle_delete(ctx: RequestContext, request: Any) -> Any:
    """Delete every named topic; unknown ones get UNKNOWN_TOPIC_OR_PARTITION (see module docs for
    authorization)."""
    results = []
    cluster_delete = ctx.authorized_cluster(AclOperation.DELETE, log_denied=False)
    for name in request.topic_names:
        describable = cluster_delete or ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
        if describable and ctx.broker.topics.get(name) is None:
            results.append({"name": name, "error_code": ErrorCode.unknown_topic_or_partition, "error_message": None})
            continue
        if not describable or not (cluster_delete or ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, name)):
            log.warning("topic.delete_refused", **ctx.log_dict(), topic=name, principal=ctx.principal)
            results.append(
                {
                    "name": name,
                    "error_code": ErrorCode.topic_authorization_failed,
                    "error_message": f"{ctx.principal} may not delete the topic '{name}'.",
                }
            )
            continue
        try:
            deleted = await ctx.broker.delete_topic(name)
        except OSError as exc:  # the registry could not be rewritten: the topic stays
            log.warning("topic.delete_failed", **ctx.log_dict(), topic=name, reason=exc)
            results.append(
                {"name": name, "error_code": ErrorCode.kafka_storage_error, "error_message": exc.strerror or str(exc)}
            )
            continue
        if deleted is None:
            results.append({"name": name, "error_code": ErrorCode.unknown_topic_or_partition, "error_message": None})
        else:
            results.append({"name": name, "error_code": ErrorCode.none, "error_message": None})
    return ctx.respond({"throttle_time": 0, "responses": results})
