"""Prometheus metrics of the coordinator: outcomes, phase latencies and in-doubt transactions."""

from __future__ import annotations

from collections.abc import Callable

from onceflow.core.metrics import ServiceMetrics


class CoordinatorMetrics:
    """The coordinator's instruments, in a registry of their own (``onceflow_coordinator_*``)."""

    def __init__(self, metrics: ServiceMetrics | None = None) -> None:
        self.service = metrics or ServiceMetrics("coordinator")
        self.transactions = self.service.counter(
            "transactions", "Transactions that reached a final state, by outcome", ("outcome",)
        )
        self.prepare_seconds = self.service.histogram(
            "prepare_seconds", "Prepare phase: from the first Prepare sent to the last vote"
        )
        self.commit_seconds = self.service.histogram(
            "commit_seconds", "Commit phase: from the commit point (COMMITTING logged) to the last ack"
        )
        self.transaction_seconds = self.service.histogram(
            "transaction_seconds", "Whole transaction: from the first CommitTransaction to its final state"
        )
        self.commit_retries = self.service.counter("commit_retries", "Commit calls that failed and were retried")
        self.in_doubt = self.service.gauge(
            "in_doubt_transactions", "Transactions not final yet (PREPARING, COMMITTING or ABORTING)"
        )

    def track_in_doubt(self, count: Callable[[], int]) -> None:
        """Have the in-doubt gauge read ``count()`` at every scrape."""
        self.in_doubt.set_function(count)
