"""Background upkeep of partition logs.

Three periodic jobs, each isolated so one failing partition never stops the others:
- flush (fsync) every partition every ``fsync_interval_ms`` when ``fsync = "interval"``;
- retention and compaction every ``maintenance_interval_ms``;
- producer-state snapshots every ``snapshot_interval_ms`` (and once more on clean shutdown, by
  :meth:`Broker.stop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from onceflow.broker.partition import Partition
from onceflow.broker.tasks import cancel_and_wait
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker

log = get_logger("onceflow.broker.maintenance")


class Maintenance:
    """Runs the periodic jobs of one broker (see module docs)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Start the periodic jobs."""
        config = self._broker.config
        if config.fsync == "interval":
            self._spawn("flush", config.fsync_interval_ms, Partition.flush)
        self._spawn("retention", config.maintenance_interval_ms, Partition.enforce_retention)
        self._spawn("snapshot", config.snapshot_interval_ms, Partition.snapshot)

    def _spawn(self, job: str, interval_ms: int, action: Callable[[Partition], object]) -> None:
        self._tasks.append(asyncio.create_task(self._every(job, interval_ms / 1000.0, action)))

    async def _every(self, job: str, interval_s: float, action: Callable[[Partition], object]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            for topic in self._broker.topics:
                for partition in topic.partitions:
                    try:
                        action(partition)
                    except Exception:
                        log.exception("maintenance.failed", job=job, topic=topic.name, partition=partition.index)
                await asyncio.sleep(0)

    async def stop(self) -> None:
        """Cancel the jobs and wait for them to end."""
        await cancel_and_wait(*self._tasks)
        self._tasks.clear()
