"""InitProducerId: a producer id and epoch for idempotent and transactional producers.

- With a ``transactional_id``, the request goes to the transaction coordinator: it bumps the id's
  epoch (fencing every earlier instance), aborts a transaction the predecessor left open (markers
  included) before answering, and honours KIP-360 bump requests (``producer_id``/``producer_epoch``).
  PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH below v4 (KIP-588).
- Without one (idempotent producers), every answer carries a producer id never handed out before on
  this data dir, with epoch 0. A producer that asks to bump its epoch (KIP-360, v3+) also gets a fresh
  id, which clients accept.

Authorization (Kafka's): with a transactional id WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
so no one else can fence its owner; without one IDEMPOTENT_WRITE on the Cluster or WRITE on some topic
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.acl import AclOperation, ResourceType
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.handlers.producer_fenced import for_client
from onceflow.broker.statelog import StateLogError
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.producer_ids")


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Answer with a producer id and epoch (see module docs); COORDINATOR_NOT_AVAILABLE (retriable)
    when the id block or the transaction log cannot be written (disk full): nothing was handed out."""
    try:
        return await _init(ctx, request)
    except (OSError, StateLogError) as exc:
        log.warning("producer.init_failed", **ctx.log_dict(), reason=exc)
        return ctx.respond(
            {
                "throttle_time": 0,
                "error_code": ErrorCode.coordinator_not_available,
                "producer_id": -1,
                "producer_epoch": -1,
            }
        )


def _refusal(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    if transactional_id is not None:
        if ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return ErrorCode.transactional_id_authorization_failed
    if ctx.authorized_cluster(AclOperation.IDEMPOTENT_WRITE, log_denied=False):
        return None
    if ctx.authorized_on_any(AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.cluster_authorization_failed


async def _init(ctx: RequestContext, request: Any) -> Any:
    transactional_id = request.transactional_id
    refused = _refusal(ctx, transactional_id)
    if refused is not None:
        log.info("producer.init_refused", **ctx.log_dict(), transactional_id=transactional_id, error=refused.name)
        return ctx.respond({"throttle_time": 0, "error_code": refused, "producer_id": -1, "producer_epoch": -1})
    if transactional_id is not None:
        timeout_ms = round(request.transaction_timeout.total_seconds() * 1000)
        result = await ctx.broker.transactions.init_producer_id(
            transactional_id,
            timeout_ms,
            int(getattr(request, "producer_id", -1)),
            int(getattr(request, "producer_epoch", -1)),
        )
        return ctx.respond(
            {
                "throttle_time": 0,
                "error_code": for_client(result.error, ctx.api_key, ctx.api_version),
                "producer_id": result.producer_id,
                "producer_epoch": result.producer_epoch,
            }
        )
    producer_id = ctx.broker.producer_ids.allocate()
    log.info("producer.init", **ctx.log_dict(), pid=producer_id, epoch="0", transactional_id="None")
    return ctx.respond(
        {"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": producer_id, "producer_epoch": 0}
    )
