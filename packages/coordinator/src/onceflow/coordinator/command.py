"""``onceflow coordinator``: run the transaction coordinator in the foreground.

Also reachable as ``python -m onceflow.coordinator``. Configuration comes from ``--config FILE``
(see services/coordinator/coordinator.toml) and ``ONCEFLOW_COORDINATOR__*`` environment variables.
Exit codes: 0 after SIGTERM/SIGINT, 2 for a bad configuration or an unreachable log, 3 when a newer
coordinator instance fenced this one, 4 when the transaction log failed.
"""

from __future__ import annotations

from onceflow.core.service import ServiceCommand

COMMAND = ServiceCommand(
    name="coordinator",
    help="run the 2PC transaction coordinator",
    description=__doc__ or "",
    service="onceflow.coordinator.service:coordinator_service",
)
