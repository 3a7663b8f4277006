"""ApiVersions: which API keys and versions this broker answers."""

from __future__ import annotations

from typing import Any

from kio.schema.api_versions.v0 import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.protocol.shapes import build_entity
from onceflow.broker.protocol.versions import SUPPORTED_VERSIONS


def _api_keys() -> list[dict[str, object]]:
    return [
        {"api_key": key, "min_version": low, "max_version": high}
        for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())
    ]


async def handle(ctx: RequestContext, request: Any) -> Any:
    """Answer with every supported API key and version range."""
    return ctx.respond({"error_code": ErrorCode.none, "api_keys": _api_keys(), "throttle_time": 0})


def unsupported_version_response() -> Any:
    """The v0-format answer to an ApiVersions request of a version this broker does not have.

    Kafka's negotiation: the client reads UNSUPPORTED_VERSION plus the supported ranges, then retries
    with the highest ApiVersions version both sides know.
    """
    return build_entity(ApiVersionsResponseV0, {"error_code": ErrorCode.unsupported_version, "api_keys": _api_keys()})
