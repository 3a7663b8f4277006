"""DescribeConfigs for TOPIC and BROKER resources (see :mod:`config_entries` for the values).

A topic needs DESCRIBE_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), the broker and its loggers
DESCRIBE_CONFIGS on the Cluster (CLUSTER_AUTHORIZATION_FAILED), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.config_entries import ConfigEntry, broker_entries, entries_of_topic
from onceflow.broker.handlers.context import RequestContext

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8


def _result(resource: Any, entries: list[ConfigEntry]) -> dict[str, object]:
    keys = resource.configuration_keys
    if keys:
        wanted = set(keys)
        entries = [e for e in entries if e.name in wanted]
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        "configs": [e.describe() for e in entries],
    }


def _error(resource: Any, code: ErrorCode, message: str) -> dict[str, object]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        "configs": [],
    }


def _refusal(ctx: RequestContext, resource: Any) -> ErrorCode | None:
    """TOPIC/CLUSTER_AUTHORIZATION_FAILED when the principal may not describe ``resource``'s configs."""
    operation = AclOperation.DESCRIBE_CONFIGS
    if resource.resource_type == TOPIC:
        allowed = ctx.authorized(operation, ResourceType.TOPIC, resource.resource_name)
        return None if allowed else ErrorCode.topic_authorization_failed
    if resource.resource_type in (BROKER, BROKER_LOGGER):
        return None if ctx.authorized_cluster(operation) else ErrorCode.cluster_authorization_failed
    return None


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Describe each requested resource; unknown topics and brokers get an error per resource."""
    broker = ctx.broker
    results = []
    for resource in request.resources:
        refused = _refusal(ctx, resource)
        if refused is not None:
            results.append(_error(resource, refused, f"{ctx.principal} may not describe the configs of it"))
        elif resource.resource_type == TOPIC:
            topic = broker.topics.get(resource.resource_name)
            if topic is None:
                results.append(
                    _error(
                        resource,
                        ErrorCode.unknown_topic_or_partition,
                        f"Topic '{resource.resource_name}' does not exist",
                    )
                )
            else:
                results.append(_result(resource, entries_of_topic(topic)))
        elif resource.resource_type == BROKER:
            if resource.resource_name not in ("", str(broker.node_id)):
                results.append(_error(resource, ErrorCode.invalid_request, f"Unknown broker {resource.resource_name}"))
            else:
                results.append(_result(resource, broker_entries(broker)))
        elif resource.resource_type == BROKER_LOGGER:
            results.append(_result(resource, []))
        else:
            results.append(
                _error(resource, ErrorCode.invalid_request, f"Unsupported resource type {resource.resource_type}")
            )
    return ctx.respond({"throttle_time": 0, "results": results})
