"""ListGroups and DescribeGroups: thin adapters over :class:`GroupCoordinator`.

ListGroups lists every group for a principal with DESCRIBE on the Cluster, otherwise only the groups
it may DESCRIBE; DescribeGroups answers GROUP_AUTHORIZATION_FAILED for a group it may not DESCRIBE.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


async def handle_list(ctx: RequestContext, request: Any) -> Any:
    """List groups, optionally filtered by state (v4+)."""
    listings = ctx.broker.groups.list_groups(tuple(getattr(request, "states_filter", ())))
    if not ctx.authorized_cluster(AclOperation.DESCRIBE, log_denied=False):
        listings = [
            g
            for g in listings
            if ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id, log_denied=False)
        ]
    return ctx.respond(
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "groups": [
                {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state} for g in listings
            ],
        }
    )


async def handle_describe(ctx: RequestContext, request: Any) -> Any:
    """Describe each group; unknown groups are described as Dead."""
    described = []
    for group_id in request.groups:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            described.append(
                {
                    "error_code": ErrorCode.group_authorization_failed,
                    "group_id": group_id,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
                }
            )
            continue
        d = ctx.broker.groups.describe_group(group_id)
        described.append(
            {
                "error_code": d.error,
                "group_id": d.group_id,
                "group_state": d.state,
                "protocol_type": d.protocol_type,
                "protocol_data": d.protocol_data,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in d.members
                ],
                "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
        )
    return ctx.respond({"throttle_time": 0, "groups": described})
