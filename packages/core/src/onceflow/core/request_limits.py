"""Size limits of request fields, shared by every gRPC service (docs/design.md: "sizes are validated at the edge").

A field over its limit is INVALID_ARGUMENT with a message naming the field and the limit, before the
request reaches the service's domain object; a whole message over
:data:`onceflow.core.grpc.server.MAX_REQUEST_BYTES` is refused by gRPC itself (RESOURCE_EXHAUSTED).
The limits keep one request's state well below what one record of the coordinator's log may hold.
"""

from __future__ import annotations

from typing import Final

#: A job name, writer id, sink name or participant target, in UTF-8 bytes.
MAX_ID_BYTES: Final = 256
#: A free-text reason (AbortTransaction, ResolveTransaction), in UTF-8 bytes.
MAX_REASON_BYTES: Final = 1024
#: Participants of one job.
MAX_PARTICIPANTS: Final = 32
#: Staged files of one transaction.
MAX_STAGED_FILES: Final = 1000
#: One staged-file URI, in UTF-8 bytes.
MAX_URI_BYTES: Final = 4096
#: All staged-file URIs of one transaction together, in UTF-8 bytes.
MAX_TOTAL_URI_BYTES: Final = 256 * 1024


def oversize(value: str, limit: int) -> str | None:
    """``None`` if ``value`` fits in ``limit`` UTF-8 bytes, else why not (for an error message)."""
    size = len(value.encode())
    return None if size <= limit else f"is {size} bytes, more than the limit of {limit} bytes"
