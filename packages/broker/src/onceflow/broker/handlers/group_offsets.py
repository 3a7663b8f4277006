"""OffsetCommit and OffsetFetch: thin adapters over :class:`GroupCoordinator`.

OffsetFetch v8+ carries a batch of groups; older versions one group, where a null topic list (v2+)
asks for every committed offset of the group. With ``require_stable`` (v7+, KIP-447), a partition
whose offset is staged by an open transaction gets UNSTABLE_OFFSET_COMMIT (offset -1) and the client
retries; the group-level error stays NONE, as in Kafka.

Authorization (Kafka's): OffsetCommit needs READ on the group (GROUP_AUTHORIZATION_FAILED for every
partition) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, the others are
committed); OffsetFetch needs DESCRIBE on the group (the group's error), and answers a topic it may
not DESCRIBE with TOPIC_AUTHORIZATION_FAILED when asked by name and leaves it out of an all-topics
answer.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.groups import Committer, OffsetAndMetadata
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.partition import now_ms


def offsets_to_commit(
    ctx: RequestContext, topics: Any, refused: ErrorCode | None
) -> tuple[dict[tuple[str, int], OffsetAndMetadata], dict[tuple[str, int], ErrorCode]]:
    """The offsets of an OffsetCommit's or TxnOffsetCommit's topics the principal may READ (stamped
    now), and the errors of the other partitions: ``refused`` for all when the group (or the
    transactional id) was refused, else TOPIC_AUTHORIZATION_FAILED for the topics without READ."""
    timestamp = now_ms()
    readable = (
        set()
        if refused is not None
        else {t.name for t in topics if ctx.authorized(AclOperation.READ, ResourceType.TOPIC, t.name)}
    )
    errors = {
        (t.name, p.partition_index): refused or ErrorCode.topic_authorization_failed
        for t in topics
        if t.name not in readable
        for p in t.partitions
    }
    offsets = {
        (topic.name, p.partition_index): OffsetAndMetadata(
            offset=p.committed_offset,
            leader_epoch=getattr(p, "committed_leader_epoch", -1),
            metadata=p.committed_metadata,
            commit_timestamp_ms=timestamp,
        )
        for topic in topics
        if topic.name in readable
        for p in topic.partitions
    }
    return offsets, errors


async def handle_commit(ctx: RequestContext, request: Any) -> Any:
    """Commit offsets for the group's current generation (or a simple commit with generation -1)."""
    refused = None
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        refused = ErrorCode.group_authorization_failed
    offsets, errors = offsets_to_commit(ctx, request.topics, refused)
    if refused is None and (offsets or not errors):
        committer = Committer(
            request.generation_id_or_member_epoch, request.member_id, getattr(request, "group_instance_id", None)
        )
        errors |= ctx.broker.groups.commit_offsets(request.group_id, committer, offsets)
    return commit_response(ctx, request.topics, errors)


def commit_response(ctx: RequestContext, topics: Any, errors: dict[tuple[str, int], ErrorCode]) -> Any:
    """The OffsetCommit (and TxnOffsetCommit) response: a code per requested partition, NONE unless in
    ``errors``."""
    return ctx.respond(
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": errors.get((topic.name, p.partition_index), ErrorCode.none),
                        }
                        for p in topic.partitions
                    ],
                }
                for topic in topics
            ],
        }
    )


def _fetch_group(ctx: RequestContext, group_id: str, topics: Any, require_stable: bool) -> dict[str, object]:
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return {"group_id": group_id, "error_code": ErrorCode.group_authorization_failed, "topics": []}

    def describable(topic: str, log_denied: bool) -> bool:
        return ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic, log_denied=log_denied)

    refused: list[dict[str, object]] = []
    if topics is not None:
        refused = [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": int(p),
                        "committed_offset": -1,
                        "committed_leader_epoch": -1,
                        "metadata": "",
                        "error_code": ErrorCode.topic_authorization_failed,
                    }
                    for p in t.partition_indexes
                ],
            }
            for t in topics
            if not describable(t.name, True)
        ]
        topics = [t for t in topics if t.name not in {r["name"] for r in refused}]
    partitions = None if topics is None else [(t.name, int(p)) for t in topics for p in t.partition_indexes]
    groups = ctx.broker.groups
    error, found = groups.fetch_offsets(group_id, partitions, require_stable)
    if partitions is None:
        found = {tp: entry for tp, entry in found.items() if describable(tp[0], False)}
    unstable = error is ErrorCode.unstable_offset_commit
    by_topic: dict[str, list[dict[str, object]]] = {}
    for (topic, partition), entry in found.items():
        pending = unstable and entry is None and groups.has_pending_txn_offsets(group_id, topic, partition)
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": entry.offset if entry is not None else -1,
                "committed_leader_epoch": entry.leader_epoch if entry is not None else -1,
                "metadata": (entry.metadata if entry is not None else "") or "",
                "error_code": ErrorCode.unstable_offset_commit if pending else ErrorCode.none,
            }
        )
    return {
        "group_id": group_id,
        "error_code": ErrorCode.none if unstable else error,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()] + refused,
    }


async def handle_fetch(ctx: RequestContext, request: Any) -> Any:
    """Return committed offsets (-1 for partitions without one)."""
    require_stable = bool(getattr(request, "require_stable", False))
    if ctx.api_version >= 8:
        groups = [_fetch_group(ctx, g.group_id, g.topics, require_stable) for g in request.groups]
        return ctx.respond({"throttle_time": 0, "groups": groups})
    single = _fetch_group(ctx, request.group_id, request.topics, require_stable)
    return ctx.respond({"throttle_time": 0, "topics": single["topics"], "error_code": single["error_code"]})
