"""What a request handler receives besides the request body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.index import load_response_schema

from onceflow.broker.acl import CLUSTER_NAME, AclOperation, ResourceType
from onceflow.broker.auth.session import ANONYMOUS, SaslSession
from onceflow.broker.protocol.shapes import build_entity
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker

log = get_logger("onceflow.broker.acl")


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

    def authorized(
        self, operation: AclOperation, resource_type: ResourceType, name: str, *, log_denied: bool = True
    ) -> bool:
        """Whether this request's principal may do ``operation`` on the resource (always, without an
        authorizer). A refusal of something the client asked for by name is logged (``acl.denied``)."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        allowed = authorizer.authorize(self.principal, self.client_host, operation, resource_type, name)
        if not allowed and log_denied:
            log.info(
                "acl.denied",
                **self.log_dict(),
                principal=self.principal,
                host=self.client_host,
                operation=operation.name,
                resource=f"{resource_type.name}:{name}",
            )
        return allowed

    def authorized_cluster(self, operation: AclOperation, *, log_denied: bool = True) -> bool:
        """Whether this request's principal may do ``operation`` on the Cluster."""
        return self.authorized(operation, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=log_denied)

    def may_create_topic(self, name: str) -> bool:
        """Kafka's rule for creating a topic: CREATE on the Cluster, or CREATE on the topic."""
        return self.authorized_cluster(AclOperation.CREATE, log_denied=False) or self.authorized(
            AclOperation.CREATE, ResourceType.TOPIC, name
        )

    def authorized_on_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Kafka's ``authorizeByResourceType``: may the principal do ``operation`` on some resource of
        the type at all?"""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize_by_resource_type(self.principal, self.client_host, operation, resource_type)

    def log_dict(self) -> dict[str, object]:
        """The ids every request-scoped log line carries: connection, client id, API key and version."""
        return {"conn": self.conn, "client_id": self.client_id, "api": self.api_key, "v": self.api_version}


Handler = Callable[[RequestContext, Any], Awaitable[Any | None]]
"""A request handler: returns the response entity, or None when no response is sent (acks=0)."""
