"""WriteTxnMarkers: a COMMIT/ABORT marker written into partitions on an admin's request.

On Apache Kafka the transaction coordinator sends this request to partition leaders; admins send
it too, to abort a hanging transaction (``kafka-transactions.sh abort --topic --partition
--start-offset``, KIP-664): the tool reads the producer id and epoch from DescribeProducers and
asks for an ABORT marker. Here the coordinator writes its markers directly, so only admins send it.

Guarantees (per partition): the marker is appended exactly as the coordinator appends its own
(:class:`~onceflow.broker.txn_markers.PartitionMarkerWriter`: durable like an acked produce, the LSO
and aborted-transaction index updated, long polls woken); an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION, an epoch older than the producer's INVALID_PRODUCER_EPOCH, a storage
failure KAFKA_STORAGE_ERROR. Writing markers needs ALTER or CLUSTER_ACTION on the Cluster
(CLUSTER_AUTHORIZATION_FAILED for every partition otherwise, nothing written), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.storage_errors import error_code_for
from onceflow.broker.storage.errors import StorageError
from onceflow.broker.transactions import MarkerWriteError, TransactionMarker
from onceflow.broker.txn_markers import PartitionMarkerWriter
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.admin")


def _write(
    ctx: RequestContext, writer: PartitionMarkerWriter, marker: Any, topic: str, partition: int, *, allowed: bool
) -> ErrorCode:
    if not allowed:
        return ErrorCode.cluster_authorization_failed
    try:
        writer.write_marker(
            TransactionMarker(
                topic=topic,
                partition=partition,
                producer_id=int(marker.producer_id),
                producer_epoch=int(marker.producer_epoch),
                coordinator_epoch=max(0, int(marker.coordinator_epoch)),
                commit=bool(marker.transaction_result),
            )
        )
    except MarkerWriteError:
        return ErrorCode.unknown_topic_or_partition
    except StorageError as exc:
        return error_code_for(exc)
    except OSError:
        return ErrorCode.kafka_storage_error
    return ErrorCode.none


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Write every requested marker (see module docs)."""
    writer = PartitionMarkerWriter(ctx.broker.topics, ctx.broker.waiters)
    allowed = ctx.authorized_cluster(AclOperation.ALTER, log_denied=False) or ctx.authorized_cluster(
        AclOperation.CLUSTER_ACTION
    )
    results = []
    for marker in request.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                code = _write(ctx, writer, marker, topic.name, int(index), allowed=allowed)
                log.info(
                    "txn.admin_marker",
                    **ctx.log_dict(),
                    topic=topic.name,
                    partition=int(index),
                    pid=int(marker.producer_id),
                    epoch=int(marker.producer_epoch),
                    marker="commit" if marker.transaction_result else "abort",
                    error=code.name,
                )
                partitions.append({"partition_index": int(index), "error_code": code})
            topics.append({"name": topic.name, "partitions": partitions})
        results.append({"producer_id": marker.producer_id, "topics": topics})
    return ctx.respond({"markers": results})
