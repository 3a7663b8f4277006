"""The consumer's change feed: every applied batch, pushed to the Results API's watchers."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

from onceflow.consumer.store import Row


@dataclass(frozen=True)
class ResultsUpdate:
    """Rows one committed batch applied, by table, and the consumer's position after it: the next
    offset per partition, by topic (every partition this instance owns)."""

    rows: dict[str, tuple[Row, ...]]
    offsets: dict[str, dict[int, int]]


@dataclass
class Subscription:
    """One watcher's queue. ``overflowed`` is set when the watcher fell ``capacity`` batches behind;
    the feed stops filling the queue then, so a slow watcher never blocks the consumer."""

    capacity: int
    updates: queue.Queue[ResultsUpdate] = field(init=False)
    overflowed: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.updates = queue.Queue(maxsize=self.capacity)

    def get(self, timeout: float) -> ResultsUpdate | None:
        """The next update, or None after ``timeout`` seconds."""
        try:
            return self.updates.get(timeout=timeout)
        except queue.Empty:
            return None


class ResultsFeed:
    """Publishes committed batches to subscribers. Publishing never blocks."""

    def __init__(self, capacity: int = 1_000) -> None:
        self._capacity = capacity
        self._by_id: dict[int, Subscription] = {}
        self._offsets: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()

    def subscribe(self) -> Subscription:
        subscription = Subscription(self._capacity)
        with self._lock:
            self._by_id[id(subscription)] = subscription
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._by_id.pop(id(subscription), None)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._by_id)

    def offsets(self, topic: str) -> dict[int, int]:
        """The offsets of ``topic`` in the last published update (empty before the first)."""
        with self._lock:
            return dict(self._offsets.get(topic, {}))

    def publish(self, update: ResultsUpdate) -> None:
        """Hand ``update`` to every subscriber (after the batch's database commit)."""
        with self._lock:
            self._offsets = {topic: dict(offsets) for topic, offsets in update.offsets.items()}
            subscriptions = list(self._by_id.values())
        for subscription in subscriptions:
            if subscription.overflowed.is_set():
                continue
            try:
                subscription.updates.put_nowait(update)
            except queue.Full:
                subscription.overflowed.set()
