"""Prometheus metrics of the participant server."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from onceflow.core.metrics import ServiceMetrics


class ParticipantMetrics:
    """Prepares (by vote), commits, aborts and recoveries per sink, and prepare latency."""

    def __init__(self, metrics: ServiceMetrics | None = None) -> None:
        self.service = metrics or ServiceMetrics("participant")
        self.prepares: Counter = self.service.counter("prepares_total", "Prepare requests by vote", ("sink", "vote"))
        self.commits: Counter = self.service.counter("commits_total", "Committed transactions", ("sink",))
        self.aborts: Counter = self.service.counter("aborts_total", "Aborted transactions", ("sink",))
        self.recovered: Counter = self.service.counter(
            "recovered_total", "Prepared transactions resolved at start, by outcome", ("sink", "outcome")
        )
        self.prepare_seconds: Histogram = self.service.histogram(
            "prepare_seconds", "Time to prepare a transaction", ("sink",)
        )
