"""Shared gRPC plumbing of every onceflow service.

- :func:`build_server`: a bound server with TLS/mTLS from :class:`~onceflow.core.settings.TlsSettings`,
  gRPC health (SERVING per service and for ``""``) and reflection, so ``grpcurl`` works;
- :func:`open_channel`: a client channel, secure when the TLS settings name a CA;
- :func:`status_for` and :func:`translate_errors`: domain exceptions become status codes at the boundary.
"""

from onceflow.core.grpc.channel import open_channel
from onceflow.core.grpc.server import HEALTH_SERVICE_NAME, build_server
from onceflow.core.grpc.status import DEFAULT_STATUS_CODES, status_for, translate_errors
from onceflow.core.grpc.tls import channel_credentials, server_credentials

__all__ = [
    "DEFAULT_STATUS_CODES",
    "HEALTH_SERVICE_NAME",
    "build_server",
    "channel_credentials",
    "open_channel",
    "server_credentials",
    "status_for",
    "translate_errors",
]
