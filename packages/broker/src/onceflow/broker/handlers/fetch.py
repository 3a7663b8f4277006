"""Fetch: return record batches, long-polling until ``min_bytes`` arrive or ``max_wait`` passes.

Steps:
    1. Register a waiter on every requested partition (before reading, so no append is missed).
    2. Read each partition from its fetch offset, up to ``partition_max_bytes`` and what is left of
       ``max_bytes``; the first non-empty partition returns at least one whole batch (KIP-74).
    3. If fewer than ``min_bytes`` were found, an error occurred, or the wait is over, answer.
       Otherwise sleep until an append to a requested partition or the deadline, then repeat from 2.

A partition of a topic the principal may not READ gets TOPIC_AUTHORIZATION_FAILED (and nothing of it
is read). Guarantees: batches are returned byte-for-byte as stored, never decoded; read_committed reads stop
at the last stable offset and carry the aborted transactions overlapping the batches returned; fetch
sessions are not kept (``session_id`` 0 means a sessionless full fetch, which every client accepts);
an offset outside ``[log_start, high_watermark]`` gets OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.storage_errors import error_code_for
from onceflow.broker.storage.errors import StorageError
from onceflow.broker.storage.header import next_offset_after
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.fetch")

READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class _Wanted:
    topic: str
    partition: int
    offset: int
    max_bytes: int


def _read_all(
    ctx: RequestContext, wanted: list[_Wanted], max_bytes: int, read_committed: bool, refused: frozenset[str]
) -> tuple[dict[str, list[dict[str, object]]], int, bool]:
    """Step 2: one pass over all partitions. Returns (results by topic, bytes found, any error)."""
    results: dict[str, list[dict[str, object]]] = {}
    remaining = max_bytes
    found = 0
    errored = False
    for item in wanted:
        entry: dict[str, object] = {"partition_index": item.partition, "records": b""}
        topic = ctx.broker.topics.get(item.topic)
        if item.topic in refused:
            entry.update(error_code=ErrorCode.topic_authorization_failed, high_watermark=-1)
            errored = True
        elif topic is None or not 0 <= item.partition < len(topic.partitions):
            entry.update(error_code=ErrorCode.unknown_topic_or_partition, high_watermark=-1)
            errored = True
        else:
            partition = topic.partitions[item.partition]
            entry.update(
                error_code=ErrorCode.none,
                high_watermark=partition.high_watermark,
                last_stable_offset=partition.last_stable_offset,
                log_start_offset=partition.log_start_offset,
                aborted_transactions=[] if read_committed else None,
            )
            limit = min(item.max_bytes, remaining)
            try:
                if limit > 0:
                    data = partition.read(item.offset, limit, read_committed=read_committed, min_one_batch=found == 0)
                else:
                    partition.check_offset(item.offset)
                    data = b""
            except StorageError as exc:
                entry["error_code"] = error_code_for(exc)
                errored = True
            else:
                entry["records"] = data
                if read_committed and data:
                    aborted = partition.log.aborted_transactions(item.offset, next_offset_after(data))
                    entry["aborted_transactions"] = [
                        {"producer_id": a.producer_id, "first_offset": a.first_offset} for a in aborted
                    ]
                found += len(data)
                remaining = max(0, remaining - len(data))
        results.setdefault(item.topic, []).append(entry)
    return results, found, errored


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Answer a Fetch request (see module docs)."""
    session_id = getattr(request, "session_id", 0)
    if session_id != 0:
        return ctx.respond(
            {"throttle_time": 0, "error_code": ErrorCode.fetch_session_id_not_found, "session_id": 0, "responses": []}
        )
    wanted = [
        _Wanted(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes)
        for t in request.topics
        for p in t.partitions
    ]
    refused = frozenset(
        name for name in {w.topic for w in wanted} if not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name)
    )
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    max_bytes = int(getattr(request, "max_bytes", 2**31 - 1))
    wait_s = max(0.0, request.max_wait.total_seconds())
    deadline = time.monotonic() + wait_s
    # Step 1
    with ctx.broker.waiters.watching((w.topic, w.partition) for w in wanted) as woken:
        while True:
            woken.clear()
            # Step 2
            results, found, errored = _read_all(ctx, wanted, max_bytes, read_committed, refused)
            # Step 3
            left = deadline - time.monotonic()
            if found >= request.min_bytes or errored or left <= 0 or not wanted:
                break
            try:
                await asyncio.wait_for(woken.wait(), timeout=left)
            except TimeoutError:
                results, found, errored = _read_all(ctx, wanted, max_bytes, read_committed, refused)
                break
    return ctx.respond(
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "session_id": 0,
            "responses": [{"topic": name, "partitions": parts} for name, parts in results.items()],
        }
    )
