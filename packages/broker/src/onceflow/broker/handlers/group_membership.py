"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: thin adapters over :class:`GroupCoordinator`.

Version differences handled here: JoinGroup v0 has no rebalance timeout (the session timeout is
used); v4+ requires a known member id (MEMBER_ID_REQUIRED first); LeaveGroup v0-2 names one member,
v3+ a batch. Every one of them needs READ on the group (GROUP_AUTHORIZATION_FAILED, nothing changed).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.groups import JoinRequest, SyncRequest
from onceflow.broker.handlers.context import RequestContext
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.groups")


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def _may_read(ctx: RequestContext, group_id: str) -> bool:
    return ctx.authorized(AclOperation.READ, ResourceType.GROUP, group_id)


_REFUSED = ErrorCode.group_authorization_failed


async def handle_join(ctx: RequestContext, request: Any) -> Any:
    """JoinGroup: returns when the rebalance completes."""
    if not _may_read(ctx, request.group_id):
        return ctx.respond(
            {
                "throttle_time": 0,
                "error_code": _REFUSED,
                "generation_id": -1,
                "protocol_name": "" if ctx.api_version < 7 else None,
                "leader": "",
                "member_id": "",
                "members": [],
            }
        )
    session_ms = _ms(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    result = await ctx.broker.groups.join_group(
        JoinRequest(
            request.group_id,
            request.member_id,
            getattr(request, "group_instance_id", None),
            request.protocol_type,
            [(p.name, bytes(p.metadata)) for p in request.protocols],
            session_ms,
            _ms(rebalance) if rebalance is not None else session_ms,
            ctx.client_id or "",
            f"/{ctx.client_host}",  # Kafka's member host is Java's InetAddress.toString(): "/127.0.0.1"
            ctx.api_version >= 4,
            getattr(request, "reason", None),
        )
    )
    log.info(
        "group.join",
        **ctx.log_dict(),
        group=request.group_id,
        member=result.member_id,
        generation=result.generation_id,
        error=result.error.name,
    )
    return ctx.respond(
        {
            "throttle_time": 0,
            "error_code": result.error,
            "generation_id": result.generation_id,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name or ("" if ctx.api_version < 7 else None),
            "leader": result.leader,
            "member_id": result.member_id,
            "members": [
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                for m in result.members
            ],
        }
    )


async def handle_sync(ctx: RequestContext, request: Any) -> Any:
    """SyncGroup: the leader's assignments are stored; every member gets its own."""
    if not _may_read(ctx, request.group_id):
        return ctx.respond({"throttle_time": 0, "error_code": _REFUSED, "assignment": b""})
    result = await ctx.broker.groups.sync_group(
        SyncRequest(
            group_id=request.group_id,
            generation_id=request.generation_id,
            member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        )
    )
    return ctx.respond(
        {
            "throttle_time": 0,
            "error_code": result.error,
            "protocol_type": result.protocol_type,
            "protocol_name": result.protocol_name,
            "assignment": result.assignment,
        }
    )


async def handle_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """Heartbeat."""
    if not _may_read(ctx, request.group_id):
        return ctx.respond({"throttle_time": 0, "error_code": _REFUSED})
    error = ctx.broker.groups.heartbeat(
        request.group_id, request.generation_id, request.member_id, getattr(request, "group_instance_id", None)
    )
    return ctx.respond({"throttle_time": 0, "error_code": error})


async def handle_leave(ctx: RequestContext, request: Any) -> Any:
    """LeaveGroup for one member (v0-2) or a batch (v3+)."""
    if not _may_read(ctx, request.group_id):
        return ctx.respond({"throttle_time": 0, "error_code": _REFUSED, "members": []})
    if ctx.api_version < 3:
        members: list[tuple[str, str | None]] = [(request.member_id, None)]
    else:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    error, answers = ctx.broker.groups.leave_group(request.group_id, members)
    if ctx.api_version < 3 and error == ErrorCode.none and answers:
        error = answers[0][2]
    log.info("group.leave", **ctx.log_dict(), group=request.group_id, members=members, error=error.name)
    return ctx.respond(
        {
            "throttle_time": 0,
            "error_code": error,
            "members": [
                {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
                for member_id, instance_id, code in answers
            ],
        }
    )
