"""InitProducerId for idempotent (non-transactional) producers.

Guarantee: every answer carries a producer id never handed out before on this data dir, with epoch 0.
A producer that asks to bump its epoch (KIP-360, v3+) also gets a fresh id, which clients accept.
Requests with a ``transactional_id`` are answered the same way until transactions are implemented.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.handlers.context import RequestContext

log = logging.getLogger("onceflow.broker.producer_ids")


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Allocate a new producer id."""
    producer_id = ctx.broker.producer_ids.allocate()
    log.info(
        "producer.init %s pid=%d epoch=0 transactional_id=%s",
        ctx.log_fields(),
        producer_id,
        request.transactional_id,
    )
    return ctx.respond(
        {"throttle_time": 0, "error_code": ErrorCode.none, "producer_id": producer_id, "producer_epoch": 0}
    )
