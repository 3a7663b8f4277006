"""AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn: thin adapters over
:class:`onceflow.broker.transactions.TransactionCoordinator`.

Guarantees:
- AddPartitionsToTxn checks that every partition exists before anything joins the transaction: if
  one does not, it gets UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED, and the
  transaction is unchanged. v4 (batched, broker-to-broker) is answered per transaction; its
  ``verify_only`` asks whether the partitions are already in the open transaction.
- TxnOffsetCommit stages the offsets in the group (generation and member checked when sent, KIP-447);
  they stay invisible to OffsetFetch until EndTxn commits them, and are discarded by an abort.
- EndTxn returns once the outcome is durable and, normally, every marker is written and the group
  offsets completed (see ``TransactionCoordinator.end_txn``).
- PRODUCER_FENCED is answered only to request versions that know it (see :mod:`producer_fenced`).
- Authorization (Kafka's): every one of them needs WRITE on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, nothing changes); AddPartitionsToTxn WRITE on each topic
  (TOPIC_AUTHORIZATION_FAILED, the other partitions OPERATION_NOT_ATTEMPTED), v4 CLUSTER_ACTION on
  the Cluster; AddOffsetsToTxn and TxnOffsetCommit READ on the group (GROUP_AUTHORIZATION_FAILED),
  TxnOffsetCommit READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.groups import Committer, TxnOffsetCommitRequest
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.group_offsets import commit_response, offsets_to_commit
from onceflow.broker.handlers.producer_fenced import for_client

TopicPartition = tuple[str, int]


def _may_write_txn(ctx: RequestContext, transactional_id: str) -> bool:
    return ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _missing_partitions(ctx: RequestContext, partitions: list[TopicPartition]) -> set[TopicPartition]:
    missing: set[TopicPartition] = set()
    for topic_name, index in partitions:
        topic = ctx.broker.topics.get(topic_name)
        if topic is None or not 0 <= index < len(topic.partitions):
            missing.add((topic_name, index))
    return missing


async def _add_partitions(
    ctx: RequestContext, transactional_id: str, producer_id: int, producer_epoch: int, topics: Any
) -> dict[TopicPartition, ErrorCode]:
    """Errors of one transaction's AddPartitionsToTxn, by partition."""
    partitions = [(t.name, int(p)) for t in topics for p in t.partitions]
    if not _may_write_txn(ctx, transactional_id):
        return dict.fromkeys(partitions, ErrorCode.transactional_id_authorization_failed)
    refused = {t.name for t in topics if not ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, t.name)}
    missing = _missing_partitions(ctx, [tp for tp in partitions if tp[0] not in refused])
    if missing or refused:
        return {
            tp: ErrorCode.topic_authorization_failed
            if tp[0] in refused
            else ErrorCode.unknown_topic_or_partition
            if tp in missing
            else ErrorCode.operation_not_attempted
            for tp in partitions
        }
    errors = await ctx.broker.transactions.add_partitions_to_txn(
        transactional_id, producer_id, producer_epoch, partitions
    )
    return {tp: for_client(code, ctx.api_key, ctx.api_version) for tp, code in errors.items()}


def _verify_partitions(ctx: RequestContext, producer_id: int, topics: Any) -> dict[TopicPartition, ErrorCode]:
    """v4 ``verify_only``: NONE for partitions in the producer's open transaction, else INVALID_TXN_STATE."""
    coordinator = ctx.broker.transactions
    return {
        (t.name, int(p)): ErrorCode.none
        if coordinator.is_partition_in_open_txn(producer_id, t.name, int(p))
        else ErrorCode.invalid_txn_state
        for t in topics
        for p in t.partitions
    }


def _topic_results(errors: dict[TopicPartition, ErrorCode]) -> list[dict[str, object]]:
    by_topic: dict[str, list[dict[str, object]]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": code})
    return [{"name": name, "results_by_partition": results} for name, results in by_topic.items()]


async def handle_add_partitions(ctx: RequestContext, request: Any) -> Any:
    """AddPartitionsToTxn (see module docs)."""
    if ctx.api_version < 4:
        errors = await _add_partitions(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
        )
        return ctx.respond({"throttle_time": 0, "results_by_topic_v3_and_below": _topic_results(errors)})
    if not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
        return ctx.respond(
            {
                "throttle_time": 0,
                "error_code": ErrorCode.cluster_authorization_failed,
                "results_by_transaction": [],
            }
        )
    results = []
    for txn in request.transactions:
        if txn.verify_only:
            errors = _verify_partitions(ctx, txn.producer_id, txn.topics)
        else:
            errors = await _add_partitions(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics)
        results.append({"transactional_id": txn.transactional_id, "topic_results": _topic_results(errors)})
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "results_by_transaction": results})


async def handle_add_offsets(ctx: RequestContext, request: Any) -> Any:
    """AddOffsetsToTxn: the group's transactional offsets will be completed by this transaction."""
    if not _may_write_txn(ctx, request.transactional_id):
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.transactional_id_authorization_failed})
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.group_authorization_failed})
    code = await ctx.broker.transactions.add_offsets_to_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
    )
    return ctx.respond({"throttle_time": 0, "error_code": for_client(code, ctx.api_key, ctx.api_version)})


async def handle_txn_offset_commit(ctx: RequestContext, request: Any) -> Any:
    """TxnOffsetCommit: stage offsets in the group until the transaction ends."""
    refused: ErrorCode | None = None
    if not _may_write_txn(ctx, request.transactional_id):
        refused = ErrorCode.transactional_id_authorization_failed
    elif not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        refused = ErrorCode.group_authorization_failed
    offsets, errors = offsets_to_commit(ctx, request.topics, refused)
    if offsets or (refused is None and not errors):
        errors |= await ctx.broker.transactions.txn_offset_commit(
            request.transactional_id,
            TxnOffsetCommitRequest(
                request.group_id,
                request.producer_id,
                request.producer_epoch,
                Committer(
                    getattr(request, "generation_id", -1),
                    getattr(request, "member_id", ""),
                    getattr(request, "group_instance_id", None),
                ),
                offsets,
            ),
        )
    translated = {partition: for_client(code, ctx.api_key, ctx.api_version) for partition, code in errors.items()}
    return commit_response(ctx, request.topics, translated)


async def handle_end_txn(ctx: RequestContext, request: Any) -> Any:
    """EndTxn: commit or abort the producer's transaction."""
    if not _may_write_txn(ctx, request.transactional_id):
        return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.transactional_id_authorization_failed})
    code = await ctx.broker.transactions.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed
    )
    return ctx.respond({"throttle_time": 0, "error_code": for_client(code, ctx.api_key, ctx.api_version)})
