"""Restart requests, delivered to every worker through the config store (as Kafka Connect does)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RestartRequest:
    """Restart ``connector``: with ``task`` set, only that task; else its tasks if ``include_tasks``
    (only the FAILED ones if ``only_failed``)."""

    connector: str
    include_tasks: bool = False
    only_failed: bool = False
    task: int | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
