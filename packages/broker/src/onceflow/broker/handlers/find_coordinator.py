"""FindCoordinator: this broker coordinates every group and every transactional id.

Handles key_type 0 (group) and 1 (transaction); v4+ requests carry a batch of keys and get one answer
per key.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.handlers.context import RequestContext

GROUP = 0
TRANSACTION = 1


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
    if ctx.api_version >= 4:
        return ctx.respond(
            {"throttle_time": 0, "coordinators": [{"key": key, **coordinator} for key in request.coordinator_keys]}
        )
    return ctx.respond({"throttle_time": 0, **coordinator})
