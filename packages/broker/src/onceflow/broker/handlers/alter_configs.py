"""AlterConfigs and IncrementalAlterConfigs for TOPIC resources (``AdminClient.alter_configs``,
``incremental_alter_configs``, ``kafka-configs --alter``).

Guarantees, per resource in request order:
- AlterConfigs replaces the topic's overrides with the given set (Kafka's semantics: a config not
  named goes back to its default); IncrementalAlterConfigs applies SET (0), DELETE (1), APPEND (2)
  and SUBTRACT (3, on list configs such as ``cleanup.policy``) to the current overrides;
- the new overrides are validated as CreateTopics validates them (INVALID_CONFIG naming the config,
  nothing changed), durable in the topic registry, and applied to every partition log before the
  answer; with ``validate_only`` nothing changes, the answer is the same;
- an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a BROKER resource is INVALID_REQUEST (this broker's
  settings are read-only at runtime, as DescribeConfigs reports them); BROKER_LOGGER is accepted
  and ignored; other resource types are INVALID_REQUEST;
- a topic needs ALTER_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), the broker and its loggers
  ALTER_CONFIGS on the Cluster (CLUSTER_AUTHORIZATION_FAILED), checked first, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.describe_configs import BROKER, BROKER_LOGGER, TOPIC
from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.errors import InvalidTopicConfig
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.admin")

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_CONFIGS = frozenset({"cleanup.policy"})

Overrides = dict[str, str]


class _Refused(Exception):  # noqa: N818 - carries the per-resource error code
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _replace(current: Overrides, configs: Any) -> Overrides:
    del current
    return {c.name: c.value for c in configs if c.value is not None}


def _incremental(current: Overrides, configs: Any, defaults: dict[str, str]) -> Overrides:
    result = dict(current)
    for config in configs:
        name, operation, value = config.name, int(config.config_operation), config.value
        if operation == SET:
            if value is None:
                raise _Refused(ErrorCode.invalid_request, f"Null value not supported for SET of '{name}'.")
            result[name] = value
        elif operation == DELETE:
            result.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            if name not in LIST_CONFIGS:
                raise _Refused(ErrorCode.invalid_config, f"Config '{name}' is not a list config.")
            items = [i for i in result.get(name, defaults.get(name, "")).split(",") if i]
            given = [i for i in (value or "").split(",") if i]
            if operation == APPEND:
                kept = items + [i for i in given if i not in items]
            else:
                kept = [i for i in items if i not in given]
            result[name] = ",".join(kept)
        else:
            raise _Refused(ErrorCode.invalid_request, f"Unknown config operation {operation} for '{name}'.")
    return result


def _alter(
    ctx: RequestContext, resource: Any, validate_only: bool, change: Callable[[Overrides, Any], Overrides]
) -> dict[str, object]:
    kind, name = int(resource.resource_type), resource.resource_name
    answer: dict[str, object] = {"resource_type": kind, "resource_name": name}
    try:
        if kind == TOPIC and not ctx.authorized(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, name):
            raise _Refused(
                ErrorCode.topic_authorization_failed, f"{ctx.principal} may not alter the configs of '{name}'."
            )
        if kind in (BROKER, BROKER_LOGGER) and not ctx.authorized_cluster(AclOperation.ALTER_CONFIGS):
            raise _Refused(ErrorCode.cluster_authorization_failed, f"{ctx.principal} may not alter broker configs.")
        if kind == BROKER_LOGGER:
            return {**answer, "error_code": ErrorCode.none, "error_message": None}
        if kind == BROKER:
            raise _Refused(ErrorCode.invalid_request, "Broker configs are read-only on the embedded broker.")
        if kind != TOPIC:
            raise _Refused(ErrorCode.invalid_request, f"Unsupported resource type {kind}.")
        topics = ctx.broker.topics
        topic = topics.get(name)
        if topic is None:
            raise _Refused(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist.")
        overrides = change(dict(topic.spec.configs), resource.configs)
        try:
            LogConfig.from_topic_configs(overrides, topics.defaults)
            if not validate_only:
                topics.alter_configs(name, overrides)
        except InvalidTopicConfig as exc:
            raise _Refused(ErrorCode.invalid_config, f"Invalid value for config '{exc.name}': {exc.reason}") from exc
        except OSError as exc:
            raise _Refused(ErrorCode.kafka_storage_error, f"Configs could not be saved: {exc.strerror or exc}") from exc
    except _Refused as refused:
        return {**answer, "error_code": refused.code, "error_message": str(refused)}
    log.info("topic.alter_configs", **ctx.log_dict(), topic=name, configs=overrides, validate_only=validate_only)
    return {**answer, "error_code": ErrorCode.none, "error_message": None}


async def handle_alter(ctx: RequestContext, request: Any) -> Any:
    """AlterConfigs (see module docs)."""
    responses = [_alter(ctx, r, bool(request.validate_only), _replace) for r in request.resources]
    return ctx.respond({"throttle_time": 0, "responses": responses})


async def handle_incremental(ctx: RequestContext, request: Any) -> Any:
    """IncrementalAlterConfigs (see module docs)."""
    defaults = ctx.broker.topics.defaults.to_topic_configs()
    responses = [
        _alter(ctx, r, bool(request.validate_only), lambda current, configs: _incremental(current, configs, defaults))
        for r in request.resources
    ]
    return ctx.respond({"throttle_time": 0, "responses": responses})
