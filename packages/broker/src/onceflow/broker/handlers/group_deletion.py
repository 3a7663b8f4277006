"""DeleteGroups: ``kafka-consumer-groups --delete``, ``AdminClient.delete_consumer_groups``.

Guarantees, per group in request order (``GroupCoordinator.delete_group``): an Empty group is
deleted with its committed and staged offsets (NONE); a group with members is NON_EMPTY_GROUP; an
unknown one GROUP_ID_NOT_FOUND; without DELETE on the group GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.groups")


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Delete every named group (see module docs)."""
    results = []
    for group_id in request.groups_names:
        if ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, group_id):
            code = ctx.broker.groups.delete_group(group_id)
        else:
            code = ErrorCode.group_authorization_failed
        log.info("group.delete", **ctx.log_dict(), group=group_id, error=code.name)
        results.append({"group_id": group_id, "error_code": code})
    return ctx.respond({"throttle_time": 0, "results": results})
