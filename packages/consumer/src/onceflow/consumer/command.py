"""``onceflow consumer``: run the results consumer and its Results API in the foreground.

Also reachable as ``python -m onceflow.consumer``. Configuration comes from ``--config FILE`` (see
services/consumer/consumer.toml) and ``ONCEFLOW_CONSUMER__*`` environment variables. Exit codes: 0
after SIGTERM/SIGINT, 2 for a bad configuration or an unreachable store, 4 when the consumer loop
failed (restart it: it resumes from the offsets stored with the results).
"""

from __future__ import annotations

from onceflow.core.service import ServiceCommand

COMMAND = ServiceCommand(
    name="consumer",
    help="run the read_committed results consumer and the Results API",
    description=__doc__ or "",
    service="onceflow.consumer.service:consumer_service",
    unreachable=("psycopg:OperationalError",),
)
