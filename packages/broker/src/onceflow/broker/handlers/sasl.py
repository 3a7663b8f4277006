"""SaslHandshake (v1) and SaslAuthenticate: the broker side of KIP-152 (see :mod:`onceflow.broker.auth.session`).

On a listener without SASL both answer ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.auth import AuthenticationFailed
from onceflow.broker.handlers.context import RequestContext
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.auth")


async def handle_handshake(ctx: RequestContext, request: Any) -> Any:
    """Choose the mechanism; answer the enabled ones."""
    session = ctx.sasl
    if session is None:
        return ctx.respond({"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []})
    if not session.handshake(request.mechanism):
        log.info("sasl.handshake_refused", **ctx.log_dict(), mechanism=request.mechanism)
        return ctx.respond(
            {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": list(session.enabled_mechanisms)}
        )
    return ctx.respond({"error_code": ErrorCode.none, "mechanisms": list(session.enabled_mechanisms)})


async def handle_authenticate(ctx: RequestContext, request: Any) -> Any:
    """Feed one token to the session; a failure is answered, then the connection closes."""
    session = ctx.sasl
    if session is None:
        return ctx.respond(
            {"error_code": ErrorCode.illegal_sasl_state, "error_message": "no SASL on this listener", "auth_bytes": b""}
        )
    try:
        answer = session.authenticate(bytes(request.auth_bytes))
    except AuthenticationFailed as exc:
        log.warning("sasl.authentication_failed", **ctx.log_dict(), mechanism=session.mechanism, reason=exc)
        return ctx.respond(
            {"error_code": ErrorCode.sasl_authentication_failed, "error_message": str(exc), "auth_bytes": b""}
        )
    if session.authenticated:
        log.info("sasl.authenticated", **ctx.log_dict(), mechanism=session.mechanism, principal=session.principal)
    return ctx.respond(
        {"error_code": ErrorCode.none, "error_message": None, "auth_bytes": answer, "session_lifetime": 0}
    )
