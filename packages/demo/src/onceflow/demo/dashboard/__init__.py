"""The demo's dashboard: metrics collection (snapshot) apart from rendering (rich, or plain lines)."""

from onceflow.demo.dashboard.plain import progress_line
from onceflow.demo.dashboard.render import render
from onceflow.demo.dashboard.snapshot import MetricsCollector, RateMeter, ServiceRow, Snapshot

__all__ = ["MetricsCollector", "RateMeter", "ServiceRow", "Snapshot", "progress_line", "render"]
