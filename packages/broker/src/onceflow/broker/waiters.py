"""Wake-ups for long-polling Fetch requests.

Guarantee: a waiter registered on a set of partitions before it checks for data is woken by any
:meth:`PartitionWaiters.notify` of one of those partitions that happens afterwards, so a fetch never
sleeps through an append (no lost wake-up).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Iterable, Iterator

TopicPartition = tuple[str, int]


class PartitionWaiters:
    """Registry of fetch waiters keyed by topic-partition."""

    def __init__(self) -> None:
        self._waiters: defaultdict[TopicPartition, set[asyncio.Event]] = defaultdict(set)

    @contextlib.contextmanager
    def watching(self, partitions: Iterable[TopicPartition]) -> Iterator[asyncio.Event]:
        """Register one event for all ``partitions``; it is set by the next notify of any of them."""
        event = asyncio.Event()
        keys = list(partitions)
        for key in keys:
            self._waiters[key].add(event)
        try:
            yield event
        finally:
            for key in keys:
                events = self._waiters.get(key)
                if events is not None:
                    events.discard(event)
                    if not events:
                        del self._waiters[key]

    def notify(self, topic: str, partition: int) -> None:
        """Wake every waiter watching ``topic``/``partition``."""
        for event in self._waiters.get((topic, partition), ()):
            event.set()
