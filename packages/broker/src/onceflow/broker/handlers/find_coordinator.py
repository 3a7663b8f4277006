"""FindCoordinator: this broker coordinates every group and every transactional id.

Handles key_type 0 (group) and 1 (transaction); v4+ requests carry a batch of keys and get one answer
per key. Finding a group's coordinator needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), a
transactional id's DESCRIBE on the id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext

GROUP = 0
TRANSACTION = 1


def _refusal(ctx: RequestContext, key_type: int, key: str) -> ErrorCode | None:
    if key_type == GROUP and not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.group_authorization_failed
    if key_type == TRANSACTION and not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.transactional_id_authorization_failed
    return None


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Point the client at this broker."""
    broker = ctx.broker
    host, port = broker.advertised
    key_type = getattr(request, "key_type", GROUP)
    if key_type in (GROUP, TRANSACTION):
        code, message = ErrorCode.none, None
    else:
        code, message = ErrorCode.invalid_request, f"Unsupported key type {key_type}"
    coordinator = {"node_id": broker.node_id, "host": host, "port": port, "error_code": code, "error_message": message}
    no_node = {"node_id": -1, "host": "", "port": -1}

    def answer(key: str) -> dict[str, object]:
        refused = _refusal(ctx, key_type, key)
        if refused is None:
            return coordinator
        return {**no_node, "error_code": refused, "error_message": refused.name}

    if ctx.api_version >= 4:
        return ctx.respond(
            {"throttle_time": 0, "coordinators": [{"key": key, **answer(key)} for key in request.coordinator_keys]}
        )
    return ctx.respond({"throttle_time": 0, **answer(request.key)})
