"""Deterministic synthetic access traffic and its exact truth.

The generator connector (``onceflow.logproducer``) produces these events; the audit (``onceflow.consumer``)
and the tests recompute them and their counts per window and ip from the seed alone, without the
connector runtime.
"""

from onceflow.ipcount.traffic.model import TrafficModel, event, ip_and_time
from onceflow.ipcount.traffic.settings import define_traffic, model_from_config, traffic_config_def
from onceflow.ipcount.traffic.truth import WindowCount, expected_counts

__all__ = [
    "TrafficModel",
    "WindowCount",
    "define_traffic",
    "event",
    "expected_counts",
    "ip_and_time",
    "model_from_config",
    "traffic_config_def",
]
