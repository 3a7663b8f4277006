"""What a request handler receives besides the request body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.index import load_response_schema

from onceflow.broker.auth.session import ANONYMOUS, SaslSession
from onceflow.broker.protocol.shapes import build_entity

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request's identity: connection, client and negotiated API version.

    ``respond`` shapes a response description (see :mod:`onceflow.broker.protocol.shapes`) into the
    response class of exactly the version the client sent.
    """

    broker: Broker
    conn: str
    client_host: str
    client_id: str | None
    api_key: int
    api_version: int
    principal: str = ANONYMOUS
    """``User:<name>`` once authenticated on a SASL listener, else ``User:ANONYMOUS``."""
    sasl: SaslSession | None = None
    """The connection's SASL state on a SASL listener (what SaslHandshake/SaslAuthenticate drive)."""

    def respond(self, values: Mapping[str, object]) -> Any:
        """Build this request's response entity from ``values``."""
        return build_entity(load_response_schema(self.api_key, self.api_version), values)

    def log_dict(self) -> dict[str, object]:
        """The ids every request-scoped log line carries: connection, client id, API key and version."""
        return {"conn": self.conn, "client_id": self.client_id, "api": self.api_key, "v": self.api_version}


Handler = Callable[[RequestContext, Any], Awaitable[Any | None]]
"""A request handler: returns the response entity, or None when no response is sent (acks=0)."""
